package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestCompose(t *testing.T) {
	docs := loadYAMLDocs(t, "compose.yaml")
	if len(docs) != 1 {
		t.Fatalf("compose.yaml has %d documents, want 1", len(docs))
	}
	c := docs[0]
	services, _ := get(c, "services").(map[string]any)
	volumes, _ := get(c, "volumes").(map[string]any)
	targets := dockerfileTargets(t)

	for _, name := range []string{"nats-1", "nats-2", "nats-3", "analyzer", "worker", "producer"} {
		if services[name] == nil {
			t.Errorf("service %s missing", name)
		}
	}
	for name, s := range services {
		// Every image we build names a stage of deploy/Dockerfile.
		if b := get(s, "build"); b != nil {
			if str(b, "dockerfile") != "deploy/Dockerfile" || str(b, "context") != ".." {
				t.Errorf("%s: build %v, want context .. and deploy/Dockerfile", name, b)
			}
			if !slices.Contains(targets, str(b, "target")) {
				t.Errorf("%s: build target %q not in Dockerfile %v", name, str(b, "target"), targets)
			}
		}
		// Named volumes are declared.
		for _, v := range list(s, "volumes") {
			vol, _, _ := strings.Cut(v.(string), ":")
			if !strings.HasPrefix(vol, ".") && !strings.HasPrefix(vol, "/") {
				if _, ok := volumes[vol]; !ok {
					t.Errorf("%s: volume %q not declared", name, vol)
				}
			}
		}
	}
	for i := 1; i <= 3; i++ {
		name := "nats-" + itoa(i)
		s := services[name]
		if got := str(s, "environment", "SERVER_NAME"); got != name {
			t.Errorf("%s: SERVER_NAME %q", name, got)
		}
		if !hasMount(list(s, "volumes"), "/data") {
			t.Errorf("%s: no volume on /data (the JetStream store)", name)
		}
	}
	// The ditto processes reach all three nodes and keep the streams at R3.
	for _, name := range []string{"analyzer", "worker", "producer"} {
		s := services[name]
		if got := str(s, "environment", "DITTO_REPLICAS"); got != "3" {
			t.Errorf("%s: DITTO_REPLICAS %q, want 3", name, got)
		}
		if got := strings.Split(str(s, "environment", "DITTO_NATS_URL"), ","); len(got) != 3 {
			t.Errorf("%s: DITTO_NATS_URL names %d servers, want 3", name, len(got))
		}
		if str(s, "labels", "prometheus.io/scrape") != "true" || str(s, "labels", "prometheus.io/path") != "/metrics" {
			t.Errorf("%s: no Prometheus scrape labels", name)
		}
	}
	if !hasMount(list(services["analyzer"], "volumes"), "/data") {
		t.Error("analyzer: no volume on /data (the DuckDB file)")
	}
	if got := str(services["worker"], "deploy", "replicas"); got != "${WORKERS:-4}" {
		t.Errorf("worker replicas %q, want scalable ${WORKERS:-4}", got)
	}
}

func hasMount(vols []any, path string) bool {
	for _, v := range vols {
		s, _ := v.(string)
		parts := strings.Split(s, ":")
		if len(parts) >= 2 && parts[1] == path {
			return true
		}
	}
	return false
}

// dockerfileTargets returns the stage names of deploy/Dockerfile.
func dockerfileTargets(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && strings.EqualFold(f[0], "FROM") && strings.EqualFold(f[2], "AS") {
			targets = append(targets, f[3])
		}
	}
	return targets
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{"nats", "producer", "worker", "analyzer"} {
		if !slices.Contains(dockerfileTargets(t), want) {
			t.Errorf("no stage %q", want)
		}
	}
	// nats-server in the image is the version go.mod pins and the Makefile installs.
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	version := ""
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/nats-io/nats-server/v2" {
			version = f[1]
		}
	}
	if version == "" {
		t.Fatal("go.mod does not require nats-server")
	}
	if !strings.Contains(df, "github.com/nats-io/nats-server/v2@"+version) {
		t.Errorf("Dockerfile does not install nats-server %s", version)
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "NATS_SERVER_VERSION := "+version) {
		t.Errorf("Makefile NATS_SERVER_VERSION is not %s", version)
	}
	// Files the Dockerfile copies from the context exist.
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "COPY" && strings.HasPrefix(f[1], "deploy/") {
			if _, err := os.Stat("../" + f[1]); err != nil {
				t.Errorf("COPY %s: %v", f[1], err)
			}
		}
	}
	if !strings.Contains(df, "CGO_ENABLED=0 go build -trimpath -o /out/producer") ||
		!strings.Contains(df, "CGO_ENABLED=0 go build -trimpath -o /out/harness-worker") {
		t.Error("producer and worker must build with CGO_ENABLED=0")
	}
}
