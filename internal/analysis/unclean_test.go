package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestAllErrored: a study whose runs never reached their model has a result — every agent
// metric null (never 1: identical empty traces would agree perfectly), the errored runs
// counted per cell with their cause — rather than perfect scores or "no runs".
func TestAllErrored(t *testing.T) {
	s := &synth{study: "nokey"}
	cell := CellKey{"renal_dosing", "gpt-4o-mini", "harness"}
	s.define([]events.Cell{{Task: cell.Task, Model: cell.Model, Condition: cell.Condition, Runs: 3}}, false)
	for i := range 3 {
		s.add(runSpec{cell: cell, run: "r" + string(rune('0'+i)), attempt: 1, input: i, status: events.StatusErrored,
			cause: events.Cause{Kind: events.CauseMissingKey, Permanent: true, Endpoint: "openai", Detail: "OPENAI_API_KEY is not set"}})
	}
	w := ingest(t, s.envs)
	rep := mustCompute(t, w.DB(), "nokey")
	c := rep.Cell(cell)
	if c == nil {
		t.Fatalf("no cell %s", cell)
	}
	if c.Data.ErroredRuns != 3 || c.Data.CountedRuns != 0 || len(c.Data.Causes) != 1 || c.Data.Causes[0].Kind != events.CauseMissingKey || c.Data.Causes[0].Runs != 3 {
		t.Errorf("data = %+v, want 3 errored runs (missing_key), none scored", c.Data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(jsonOf(t, c.Metrics)), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rr", "di", "tss", "ac"} {
		if v := m[k].(map[string]any)["value"]; v != nil {
			t.Errorf("%s = %v, want null", k, v)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "missing_key: OPENAI_API_KEY is not set (3)") {
		t.Errorf("notes %q do not give the cause", rep.Notes)
	}
}

// TestGapUntilWhole: a finished run whose history has a gap is incomplete and out of the
// metrics; when the missing event arrives, the run folds and is scored.
func TestGapUntilWhole(t *testing.T) {
	s := &synth{study: "gap"}
	cell := CellKey{"t", "m", "c"}
	s.define([]events.Cell{{Task: cell.Task, Model: cell.Model, Condition: cell.Condition, Runs: 3}}, false)
	for i := range 3 {
		s.add(runSpec{cell: cell, run: "r" + string(rune('0'+i)), attempt: 1, input: i, gap: i == 1,
			steps:  []step{{state: "a", tool: "x", args: map[string]any{"k": 1}}},
			output: map[string]any{"ok": true}, status: events.StatusSucceeded, success: true, tokens: [2]int64{10, 1}, latencyMS: 5})
	}
	if len(s.late) != 1 {
		t.Fatalf("%d late events, want 1", len(s.late))
	}
	b := bustest.NewServer(t).Connect(t)
	warehousetest.PublishFast(t, b, warehousetest.EnvelopeMsgs(t, s.envs))
	cfg := warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond}
	w := warehousetest.Ingest(t, b, cfg)
	d := mustCompute(t, w.DB(), "gap").Cell(cell).Data
	if d.CountedRuns != 2 || d.IncompleteRuns != 1 || d.FoldErrors != 1 {
		t.Fatalf("with the gap: %+v, want 2 scored, 1 incomplete (fold error)", d)
	}
	warehousetest.Publish(t, b, warehousetest.EnvelopeMsgs(t, s.late))
	if err := w.CatchUp(warehousetest.Context(t, 60*time.Second), b, cfg); err != nil {
		t.Fatal(err)
	}
	d = mustCompute(t, w.DB(), "gap").Cell(cell).Data
	if d.CountedRuns != 3 || d.IncompleteRuns != 0 || d.FoldErrors != 0 {
		t.Errorf("once whole: %+v, want 3 scored, none incomplete", d)
	}
}
