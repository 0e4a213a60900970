package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// loadNATS parses a NATS configuration file the way nats-server does at start.
func loadNATS(t *testing.T, path string) *server.Options {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("ProcessConfigFile(%q) = %v", path, err)
	}
	return opts
}

func routeHosts(opts *server.Options) []string {
	var hosts []string
	for _, u := range opts.Routes {
		hosts = append(hosts, u.Host)
	}
	return hosts
}

// ephemeral reports whether port is in Linux's default ephemeral range, where an outgoing
// connection of any process may already hold it.
func ephemeral(port int) bool { return port >= 32768 && port <= 60999 }

func TestLocalClusterConfigs(t *testing.T) {
	names := map[string]bool{}
	ports := map[int]string{}
	for i := 1; i <= 3; i++ {
		path := filepath.Join("local", "n"+string(rune('0'+i))+".conf")
		t.Run(path, func(t *testing.T) {
			opts := loadNATS(t, path)
			if names[opts.ServerName] {
				t.Errorf("server_name %q used twice", opts.ServerName)
			}
			names[opts.ServerName] = true
			if !opts.JetStream {
				t.Error("JetStream not enabled")
			}
			if !opts.SyncAlways {
				t.Error("sync_interval is not always")
			}
			if opts.StoreDir != "" {
				t.Errorf("store_dir %q in the file; cluster.sh passes --store_dir", opts.StoreDir)
			}
			if opts.Cluster.Name != "ditto-local" {
				t.Errorf("cluster name %q", opts.Cluster.Name)
			}
			for _, addr := range []struct {
				what string
				host string
				port int
			}{{"client", opts.Host, opts.Port}, {"route", opts.Cluster.Host, opts.Cluster.Port}, {"monitor", opts.HTTPHost, opts.HTTPPort}} {
				if addr.host != "127.0.0.1" {
					t.Errorf("%s listens on %q, want loopback", addr.what, addr.host)
				}
				if addr.port == 0 || ephemeral(addr.port) {
					t.Errorf("%s port %d: want fixed and outside 32768-60999", addr.what, addr.port)
				}
				if other, dup := ports[addr.port]; dup {
					t.Errorf("%s port %d also used by %s", addr.what, addr.port, other)
				}
				ports[addr.port] = path + " " + addr.what
			}
			if len(opts.Routes) != 3 {
				t.Fatalf("routes %v, want 3", routeHosts(opts))
			}
			for _, u := range opts.Routes {
				if u.Hostname() != "127.0.0.1" || ephemeral(portOf(t, u.Port())) {
					t.Errorf("route %s: want loopback, fixed port", u)
				}
			}
			if opts.MaxPayload < 1<<20 {
				t.Errorf("max_payload %d < 1 MiB (events.MaxEventSize)", opts.MaxPayload)
			}
		})
	}
	// Every node's route list names every node's cluster port.
	var clusterPorts []string
	for port, what := range ports {
		if strings.HasSuffix(what, " route") {
			clusterPorts = append(clusterPorts, "127.0.0.1:"+itoa(port))
		}
	}
	opts := loadNATS(t, filepath.Join("local", "n1.conf"))
	for _, h := range routeHosts(opts) {
		if !slices.Contains(clusterPorts, h) {
			t.Errorf("route %s is no node's cluster listen address %v", h, clusterPorts)
		}
	}
}

func TestClusterConf(t *testing.T) {
	t.Setenv("SERVER_NAME", "nats-2")
	opts := loadNATS(t, filepath.Join("nats", "cluster.conf"))
	checkClusterNode(t, opts, "nats-2", []string{"nats-1:6222", "nats-2:6222", "nats-3:6222"})
}

func TestKubernetesNATSConf(t *testing.T) {
	var conf string
	for _, d := range loadYAMLDocs(t, filepath.Join("k8s", "nats.yaml")) {
		if str(d, "kind") == "ConfigMap" && str(d, "metadata", "name") == "nats-config" {
			conf = str(d, "data", "nats.conf")
		}
	}
	if conf == "" {
		t.Fatal("no ConfigMap nats-config with nats.conf")
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "nats-1")
	opts := loadNATS(t, path)
	checkClusterNode(t, opts, "nats-1", []string{"nats-0.nats-headless:6222", "nats-1.nats-headless:6222", "nats-2.nats-headless:6222"})
	if opts.PidFile == "" {
		t.Error("no pid_file: the preStop lame-duck signal needs it")
	}
}

func checkClusterNode(t *testing.T, opts *server.Options, name string, routes []string) {
	t.Helper()
	if opts.ServerName != name {
		t.Errorf("server_name %q, want %q (from the environment)", opts.ServerName, name)
	}
	if !opts.JetStream || opts.StoreDir != "/data/jetstream" {
		t.Errorf("JetStream %v store %q, want enabled on /data/jetstream (the volume)", opts.JetStream, opts.StoreDir)
	}
	if !opts.SyncAlways {
		t.Error("sync_interval is not always")
	}
	if opts.Port != 4222 || opts.Cluster.Port != 6222 || opts.HTTPPort != 8222 {
		t.Errorf("ports client %d cluster %d http %d, want 4222 6222 8222", opts.Port, opts.Cluster.Port, opts.HTTPPort)
	}
	if got := routeHosts(opts); !slices.Equal(got, routes) {
		t.Errorf("routes %v, want %v", got, routes)
	}
	if opts.LameDuckDuration <= 0 {
		t.Error("no lame_duck_duration")
	}
}

func TestClusterScriptSyntax(t *testing.T) {
	out, err := exec.Command("bash", "-n", filepath.Join("local", "cluster.sh")).CombinedOutput()
	if err != nil {
		t.Fatalf("bash -n local/cluster.sh: %v\n%s", err, out)
	}
}
