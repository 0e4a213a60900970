package faultsuite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
)

// node is one nats-server process.
type node struct {
	name       string
	conf       string
	store      string
	clientPort int
	p          *proc
	args       []string
}

// cluster is the local 3-node cluster of deploy/local, on its own ports (2422x clients,
// 2622x routes, 2822x monitoring) so that it never meets one started by make cluster-up.
type cluster struct {
	t     *testing.T
	b     *bins
	dir   string
	nodes []*node
}

// startCluster starts three nats-server processes from deploy/local/n{1,2,3}.conf and waits
// until JetStream answers with ditto's streams at R3. sync is "always" (the shipped setting) or
// "default" (the line removed).
func startCluster(t *testing.T, b *bins, dir, sync string) *cluster {
	t.Helper()
	c := &cluster{t: t, b: b, dir: dir}
	for i := 1; i <= 3; i++ {
		raw, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "local", fmt.Sprintf("n%d.conf", i)))
		if err != nil {
			t.Fatal(err)
		}
		conf := strings.NewReplacer("1422", "2422", "1622", "2622", "1822", "2822").Replace(string(raw))
		if sync == "default" {
			var kept []string
			for _, l := range strings.Split(conf, "\n") {
				if !strings.Contains(l, "sync_interval:") {
					kept = append(kept, l)
				}
			}
			conf = strings.Join(kept, "\n")
		}
		n := &node{name: fmt.Sprintf("n%d", i), conf: filepath.Join(dir, fmt.Sprintf("n%d.conf", i)),
			store: filepath.Join(dir, fmt.Sprintf("n%d", i)), clientPort: 24220 + i}
		if err := os.WriteFile(n.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		n.args = []string{"-c", n.conf, "--store_dir", n.store}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.p = start(t, dir, n.name, b.natsServer, nil, n.args...)
	}
	c.waitStreams(3)
	return c
}

// URLs is the client URL list of the three nodes.
func (c *cluster) URLs() string {
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.clientPort))
	}
	return strings.Join(urls, ",")
}

// waitStreams waits until ditto's streams can be created or updated at the given replicas.
func (c *cluster) waitStreams(replicas int) {
	c.t.Helper()
	poll(c.t, 60*time.Second, "JetStream cluster with R3 streams", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, err := bus.Open(ctx, bus.Config{URL: c.URLs(), Replicas: replicas, Name: "faulttest"})
		if err != nil {
			return false, err
		}
		defer b.Close()
		return b.EnsureStreams(ctx) == nil, nil
	})
}

// kill SIGKILLs node i (0-based).
func (c *cluster) kill(i int) { c.nodes[i].p.kill() }

// restart starts node i again on its store.
func (c *cluster) restart(i int) {
	n := c.nodes[i]
	n.p = start(c.t, c.dir, n.name, c.b.natsServer, nil, n.args...)
	poll(c.t, 30*time.Second, n.name+" accepting clients", func() (bool, error) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.clientPort), time.Second)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
	c.t.Logf("restarted %s (pid %d)", n.name, n.p.pid())
}

// stop stops every running node cleanly.
func (c *cluster) stop() {
	for _, n := range c.nodes {
		if n.p.running() {
			_ = n.p.stop(30 * time.Second)
		}
	}
}

// single is one nats-server process with JetStream on a free loopback port.
func single(t *testing.T, b *bins, dir string) (*proc, string) {
	t.Helper()
	port := freePort(t)
	p := start(t, dir, "nats", b.natsServer, nil, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port),
		"--store_dir", filepath.Join(dir, "js"), "--server_name", "single")
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	poll(t, 30*time.Second, "nats-server with JetStream", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		bb, err := bus.Open(ctx, bus.Config{URL: url, Name: "faulttest"})
		if err != nil {
			return false, err
		}
		defer bb.Close()
		return bb.EnsureStreams(ctx) == nil, nil
	})
	return p, url
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// connect opens a bus for the test's own observations (no stream changes).
func connect(t *testing.T, url string) *bus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, bus.Config{URL: url, Name: "faulttest-observer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
