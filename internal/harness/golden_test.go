package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/simllm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const goldenHistories = "testdata/histories.golden"

// TestHistoriesGolden freezes what the harness emits: for a matrix of runs (both simulated
// models over the real client, every task, the named conditions, each component alone and
// tight limits, several seeds; and scripted models for the paths the simulated models rarely
// take) it hashes each run's payloads in order, latencies aside, together with its Result.
// Any change to an event, to the order of events or to the Result changes a hash: a refactoring
// of the harness must leave the file as it is (go test -run HistoriesGolden -update rewrites
// it when a change is meant).
func TestHistoriesGolden(t *testing.T) {
	var got []string
	record := func(name string, res harness.Result, rec *harnesstest.Recorder, url string) {
		got = append(got, name+" "+historyHash(t, res, rec, url))
	}

	srv, err := simllm.NewServer(simllm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	conditions := []string{"baseline", "harness", "harness_sp", "fsm", "forced_tool", "validation", "retry",
		"structured_planning", "schema_gate", "permission_gate", "circuit_breaker", "harness-retry",
		"tight", "budget:harness_sp", "budget:circuit_breaker"}
	seeds := 6
	if testing.Short() {
		seeds = 2 // a prefix of the golden's runs
	}
	for _, model := range srv.Models() {
		client, err := llm.NewOpenAI(llm.Config{BaseURL: hs.URL + "/v1", Model: model})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range []string{"credit_ecl", "renal_dosing", "aml_screening"} {
			for _, c := range conditions {
				for seed := range seeds {
					s := spec(t, task, "harness_sp", seed%2)
					// Small limits, so that escalations of every kind show up.
					switch name, budget := strings.CutPrefix(c, "budget:"); {
					case c == "tight":
						s.Condition.Limits = condition.Limits{MaxRetries: 1, MaxPlanReprompts: 1, MaxRepairTurns: 1, MaxSteps: 4}
					case budget:
						s.Condition = cond(t, name)
						s.Condition.Limits.TokenBudget = 2500
					default:
						s.Condition = cond(t, c)
					}
					sd := int64(seed)
					s.Seed, s.SeedIndex, s.Model, s.Simulated = &sd, seed, model, true
					rec := harnesstest.NewRecorder()
					res, err := harness.Run(context.Background(), s, client, rec)
					if err != nil {
						t.Fatalf("%s/%s/%s seed %d: %v", model, task, c, seed, err)
					}
					record(fmt.Sprintf("%s/%s/%s/%d", model, task, c, seed), res, rec, hs.URL)
				}
			}
		}
	}

	registerSpy()
	big := `{"path":"` + strings.Repeat("x", 300<<10) + `"}`
	scripts := []struct {
		name, cond string
		turns      []harnesstest.Turn
		then       harnesstest.Turn
	}{
		{"tool-before-plan", "harness_sp", []harnesstest.Turn{harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`)}, nil},
		{"bad-plans", "harness_sp", []harnesstest.Turn{harnesstest.Text("[]"), harnesstest.Text("not json"), harnesstest.Text(`[{"state":"FIRST","intended_tool":"first_tool"}]`)}, nil},
		{"oversized-args", "baseline", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", big), harnesstest.Text("stop")}, nil},
		{"unknown-tool", "harness", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("nope", `{}`), harnesstest.Call("nope", `{}`)}, nil},
		{"wrong-tool", "fsm", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("final_tool", `{"path":"data/spy/ok"}`), harnesstest.Text("no call")}, nil},
		{"schema-not-json", "schema_gate", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":`), harnesstest.Text("stop")}, nil},
		{"schema-violation", "harness", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":1}`), harnesstest.Call("first_tool", `{"path":"data/spy/ok","limit":12}`)}, nil},
		{"permission", "permission_gate", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/other"}`), harnesstest.Text("stop")}, nil},
		{"tool-error", "harness", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/spy/ok","fail":true}`)}, nil},
		{"tool-error-free", "baseline", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/spy/ok","fail":true}`), harnesstest.Text("stop")}, nil},
		{"output-invalid", "validation", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/spy/ok","limit":3}`), harnesstest.Text("stop")}, nil},
		{"after-done", "harness", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`),
			func(llm.Request) (llm.Response, error) {
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "a", Name: "final_tool", Arguments: `{"path":"data/spy/ok"}`},
					{ID: "b", Name: "final_tool", Arguments: `{"path":"data/spy/ok"}`}, {Name: "", Arguments: ""}}}, nil
			}}, nil},
		{"retries-exhausted", "harness", []harnesstest.Turn{harnesstest.Text("plan")}, harnesstest.Call("nope", `{}`)},
		{"repair-turns", "circuit_breaker", []harnesstest.Turn{harnesstest.Text("plan")}, harnesstest.Call("nope", `{}`)},
		{"no-call-fsm", "fsm", []harnesstest.Turn{harnesstest.Text("plan")}, harnesstest.Text("thinking")},
		{"model-error", "harness_sp", []harnesstest.Turn{harnesstest.Fail(errors.New("scripted outage"))}, nil},
		{"model-error-acting", "harness", []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`), harnesstest.Fail(errors.New("scripted outage"))}, nil},
	}
	for _, sc := range scripts {
		for _, budget := range []int64{0, 120} {
			s := spec(t, spyTask, sc.cond, 0)
			s.Condition.Limits.TokenBudget = budget
			s.Condition.Limits.MaxSteps = 6
			rec := harnesstest.NewRecorder()
			res, err := harness.Run(context.Background(), s, &harnesstest.Script{Turns: sc.turns, Then: sc.then}, rec)
			if err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
			record(fmt.Sprintf("script/%s/budget%d", sc.name, budget), res, rec, "")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := harnesstest.NewRecorder()
	res, err := harness.Run(ctx, spec(t, spyTask, "harness", 0), &harnesstest.Script{}, rec)
	if err != nil {
		t.Fatal(err)
	}
	record("script/cancelled", res, rec, "")

	want := strings.Join(got, "\n") + "\n"
	if *update {
		if testing.Short() {
			t.Fatal("-update needs the whole matrix: run without -short")
		}
		if err := os.MkdirAll(filepath.Dir(goldenHistories), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenHistories, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(goldenHistories)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	golden := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, hash, _ := strings.Cut(sc.Text(), " ")
		golden[name] = hash
	}
	if len(golden) != len(got) && !testing.Short() {
		t.Errorf("%d runs in %s, %d run now", len(golden), goldenHistories, len(got))
	}
	for _, line := range got {
		name, hash, _ := strings.Cut(line, " ")
		if golden[name] != hash {
			t.Errorf("run %s: history hash %s, golden %q", name, hash, golden[name])
		}
	}
}

// zeroLatency is p with the times it measured (model and tool latencies, the run's) set to 0:
// the rest of a payload is what a deterministic run repeats.
func zeroLatency(p events.Payload) events.Payload {
	switch p := p.(type) {
	case events.ModelCalled:
		p.LatencyMS = 0
		return p
	case events.ToolReturned:
		p.DurationMS = 0
		return p
	case events.RunFinished:
		p.Totals.LatencyMS = 0
		return p
	}
	return p
}

// historyHash hashes a run's payloads in order, latencies zeroed and the server's address
// replaced, followed by its Result (latency aside).
func historyHash(t *testing.T, res harness.Result, rec *harnesstest.Recorder, url string) string {
	t.Helper()
	h := sha256.New()
	for _, e := range rec.Envelopes {
		b, err := json.Marshal(zeroLatency(e.Payload))
		if err != nil {
			t.Fatal(err)
		}
		if url != "" {
			b = bytes.ReplaceAll(b, []byte(url), []byte("URL"))
		}
		fmt.Fprintf(h, "%d %s %s\n", e.Seq, e.Type, b)
	}
	res.Latency, res.Totals.LatencyMS = 0, 0
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if url != "" {
		b = bytes.ReplaceAll(b, []byte(url), []byte("URL"))
	}
	h.Write(b)
	return fmt.Sprintf("%x", h.Sum(nil))
}
