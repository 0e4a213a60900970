package analysis

import (
	"testing"

	"github.com/dittolab/ditto/events"
)

// TestCountedAttempts checks the counting rule on the cases the main study lacks: a run whose
// latest attempt is still running counts by its earlier finished attempt; a run with two
// unfinished attempts is incomplete with one superseded attempt.
func TestCountedAttempts(t *testing.T) {
	s := &synth{study: "s4"}
	cell := CellKey{"t", "m", "baseline"}
	base := runSpec{cell: cell, steps: []step{{state: "a", tool: "x", args: map[string]any{"k": 1}}},
		output: map[string]any{"ok": true}, status: events.StatusSucceeded, success: true, tokens: [2]int64{10, 1}, latencyMS: 5}
	add := func(run string, attempt int, unfinished bool, latency float64) {
		r := base
		r.run, r.attempt, r.unfinished, r.latencyMS = run, attempt, unfinished, latency
		s.add(r)
	}
	add("r0", 1, false, 7) // counted
	add("r0", 2, true, 0)  // running
	add("r1", 1, true, 0)  // superseded
	add("r1", 2, true, 0)  // running: r1 is incomplete
	add("r2", 1, false, 9) // counted
	w := ingest(t, s.envs)
	rep := mustCompute(t, w.DB(), "s4")
	c := rep.Cell(cell)
	if c == nil {
		t.Fatalf("no cell %s in %+v", cell, rep.Cells)
	}
	d := c.Data
	if d.Runs != 3 || d.CountedRuns != 2 || d.RunningAttempts != 2 || d.IncompleteRuns != 1 || d.SupersededAttempts != 1 || d.SupersededFinished != 0 {
		t.Errorf("data = %+v, want 3 runs, 2 counted, 2 running attempts, 1 incomplete run, 1 superseded attempt", d)
	}
	if c.Metrics.Latency.Mean.V != 8 {
		t.Errorf("mean latency = %v, want 8 (attempt 1 of r0 and r2)", c.Metrics.Latency.Mean)
	}
}
