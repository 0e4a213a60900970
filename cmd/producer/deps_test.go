package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// linkRule names packages a binary must not link: the package itself, or with subtree every
// package below the path too (a module).
type linkRule struct {
	path    string
	subtree bool
	why     string
}

var (
	noDuckDB  = linkRule{"github.com/duckdb/", true, "DuckDB (cgo) belongs to the analyzer"}
	noArrow   = linkRule{"github.com/apache/arrow-go/", true, "Arrow belongs to the analyzer"}
	noHarness = linkRule{"github.com/dittolab/ditto/internal/harness", false, "the harness runs in the worker"}
	noLLM     = linkRule{"github.com/dittolab/ditto/internal/llm", false, "the LLM client runs in the worker"}
	noOpenAI  = linkRule{"github.com/sashabaranov/go-openai", true, "the LLM client runs in the worker"}
	noSim     = linkRule{"github.com/dittolab/ditto/internal/simllm", false, "the simulated models run in the worker"}
	noWorker  = linkRule{"github.com/dittolab/ditto/internal/worker", false, "the producer only submits jobs"}
	noMCP     = linkRule{"github.com/modelcontextprotocol/", true, "tool servers are reached by the worker; the producer validates task files without them"}
	noTools   = linkRule{"github.com/dittolab/ditto/internal/toolserver", false, "tool servers are reached by the worker"}
)

func (r linkRule) matches(pkg string) bool {
	if r.subtree {
		return strings.HasPrefix(pkg, r.path) || pkg == strings.TrimSuffix(r.path, "/")
	}
	return pkg == r.path
}

// TestLinkedPackages lists what each cgo-free binary links (go list -deps with cgo on and
// every build tag the tree uses: the largest set any build of it links) and fails when it
// links what it must not. The producer submits jobs and receives production traces; the
// worker runs the harness against the models; only the analyzer holds DuckDB and Arrow.
func TestLinkedPackages(t *testing.T) {
	tests := []struct {
		binary string
		rules  []linkRule
	}{
		{"github.com/dittolab/ditto/cmd/producer", []linkRule{noDuckDB, noArrow, noHarness, noLLM, noOpenAI, noSim, noWorker, noMCP, noTools}},
		{"github.com/dittolab/ditto/cmd/harness-worker", []linkRule{noDuckDB, noArrow}},
	}
	for _, tt := range tests {
		t.Run(tt.binary, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-tags", "duckdb_arrow", tt.binary)
			cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.binary, err)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, "github.com/dittolab/ditto/events") {
				t.Fatalf("go list -deps %s lists %d packages, not events: is it listing the binary?", tt.binary, len(deps))
			}
			for _, r := range tt.rules {
				for _, pkg := range deps {
					if r.matches(pkg) {
						t.Errorf("%s links %s: %s", tt.binary, pkg, r.why)
						break
					}
				}
			}
		})
	}
}
