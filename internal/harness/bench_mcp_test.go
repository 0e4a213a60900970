package harness_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
	"github.com/dittolab/ditto/internal/toolserver"
)

// dpaTurn does the example task (examples/dpa-review) on DPA-2024-017, the compliant
// agreement: a plan when asked, then fetch, assess and file.
func dpaTurn(req llm.Request) (llm.Response, error) {
	calls := 0
	for _, m := range req.Messages {
		calls += len(m.ToolCalls)
	}
	if len(req.Tools) == 0 {
		return llm.Response{Content: "Plan: fetch, assess, file.", FinishReason: "stop"}, nil
	}
	steps := []llm.ToolCall{
		{Name: "fetch_agreement", Arguments: `{"agreement_id":"DPA-2024-017"}`},
		{Name: "assess_requirements", Arguments: `{"agreement_id":"DPA-2024-017"}`},
		{Name: "file_review", Arguments: `{"agreement_id":"DPA-2024-017","outcome":"compliant","missing":[]}`},
	}
	if calls >= len(steps) {
		return llm.Response{Content: "Filed.", FinishReason: "stop"}, nil
	}
	c := steps[calls]
	c.ID = "call_" + string(rune('1'+calls))
	return llm.Response{ToolCalls: []llm.ToolCall{c}, FinishReason: "tool_calls"}, nil
}

// dpaTask is the example task (examples/dpa-review/task.yaml) with its tools bound to the
// example's MCP server, built first and started over stdio by a pool closed with tb.
func dpaTask(tb testing.TB) *tasks.Task {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "dpa-review-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/dpa-review/server").CombinedOutput(); err != nil {
		tb.Fatalf("building the example server: %v\n%s", err, out)
	}
	data, err := os.ReadFile("../../examples/dpa-review/task.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "command: [go, run, ./examples/dpa-review/server]", "command: ["+bin+"]", 1))
	f, err := tasks.ParseFile("task.yaml", data)
	if err != nil {
		tb.Fatal(err)
	}
	pool := &toolserver.Pool{}
	tb.Cleanup(func() { _ = pool.Close() })
	task, err := tasks.FromFile(f, pool)
	if err != nil {
		tb.Fatal(err)
	}
	return task
}

// BenchmarkStepMCP is BenchmarkStep with the tools served by an MCP server over stdio (the
// example's server, examples/dpa-review/server, built first): the harness's overhead per step
// including the MCP round trip, p50 and p99, to read beside BenchmarkStep's in-process tools.
func BenchmarkStepMCP(b *testing.B) {
	task := dpaTask(b)
	for _, cond := range []string{"harness", "baseline"} {
		b.Run("dpa_review/"+cond+"/with-events", func(b *testing.B) {
			c, _ := condition.Parse(cond)
			seed := int64(1)
			m := &gapModel{turn: dpaTurn}
			var fold *events.Run
			em := &harness.Sequencer{Study: "bench", Run: "r", Attempt: 1, Source: events.Source{Kind: events.SourceHarness, ID: "bench"},
				Publish: func(_ context.Context, e *events.Envelope) error {
					if _, err := events.Encode(e); err != nil {
						return err
					}
					return fold.Apply(e)
				}}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				fold = &events.Run{}
				*em = harness.Sequencer{Study: em.Study, Run: em.Run, Attempt: 1, Source: em.Source, Publish: em.Publish}
				s := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: c, Model: "bench", Seed: &seed}
				m.last = time.Now()
				res, err := harness.Run(context.Background(), s, m, em)
				m.gaps = append(m.gaps, time.Since(m.last))
				if err != nil || !res.Success {
					b.Fatalf("run %d: %v %s %s", i, err, res.Status, res.Error)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			m.report(b, elapsed)
		})
	}
}
