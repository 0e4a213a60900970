package faultsuite

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployCommands runs every ditto command line of deploy/compose.yaml and deploy/k8s with
// -h appended: flag parsing stops at -h with status 0 only if every flag before it exists, so
// a manifest naming a flag the binary lacks fails here rather than in a crash-looping pod.
func TestDeployCommands(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	b := build(t)
	bin := map[string]string{"ditto/producer": b.producer, "ditto/harness-worker": b.worker, "ditto/analyzer": b.analyzer}
	type cmdline struct {
		where string
		image string
		args  []string
	}
	var lines []cmdline
	root := filepath.Join(repoRoot(), "deploy")
	files, _ := filepath.Glob(filepath.Join(root, "k8s", "*.yaml"))
	files = append(files, filepath.Join(root, "compose.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			// compose services
			if svcs, ok := doc["services"].(map[string]any); ok {
				for name, s := range svcs {
					m := s.(map[string]any)
					if cmd, ok := m["command"].([]any); ok {
						lines = append(lines, cmdline{f + " " + name, strings.Split(m["image"].(string), ":")[0], strs(cmd)})
					}
				}
			}
			// Kubernetes pod templates
			spec, _ := doc["spec"].(map[string]any)
			tpl, _ := spec["template"].(map[string]any)
			pod, _ := tpl["spec"].(map[string]any)
			for _, c := range asList(pod["containers"]) {
				m := c.(map[string]any)
				if args, ok := m["args"].([]any); ok {
					lines = append(lines, cmdline{f + " " + m["name"].(string), strings.Split(m["image"].(string), ":")[0], strs(args)})
				}
			}
		}
	}
	checked := 0
	for _, l := range lines {
		path, ok := bin[l.image]
		if !ok {
			continue // nats-server and the exporter: checked by package deploy's tests
		}
		out, err := exec.Command(path, append(l.args, "-h")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %s %s -h: %v\n%s", l.where, l.image, strings.Join(l.args, " "), err, out)
		}
		checked++
	}
	if checked < 6 {
		t.Fatalf("checked %d ditto command lines, want the 3 of compose and the 3 of k8s", checked)
	}
	t.Logf("%d command lines accepted", checked)
}

func strs(l []any) []string {
	var out []string
	for _, v := range l {
		out = append(out, v.(string))
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }
