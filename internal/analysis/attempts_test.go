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

// TestRunAcrossCells: a run whose attempts name different cells counts once in the study, in
// the cell of its latest finished attempt (else of its latest attempt), and every cell's runs
// are its counted, errored, aborted and incomplete runs.
func TestRunAcrossCells(t *testing.T) {
	s := &synth{study: "s5"}
	a, b := CellKey{"t", "m", "baseline"}, CellKey{"t", "m", "harness"}
	base := runSpec{steps: []step{{state: "a", tool: "x", args: map[string]any{"k": 1}}},
		output: map[string]any{"ok": true}, status: events.StatusSucceeded, success: true, tokens: [2]int64{10, 1}, latencyMS: 5}
	add := func(cell CellKey, run string, attempt int, unfinished bool) {
		r := base
		r.cell, r.run, r.attempt, r.unfinished = cell, run, attempt, unfinished
		s.add(r)
	}
	add(a, "r0", 1, false) // counted in a
	add(b, "r0", 2, true)  // running in b
	add(a, "r1", 1, true)  // superseded
	add(b, "r1", 2, true)  // running: r1 is incomplete, in b
	add(a, "r2", 1, false) // counted in a
	w := ingest(t, s.envs)
	rep := mustCompute(t, w.DB(), "s5")
	var runs int64
	for _, c := range rep.Cells {
		d := c.Data
		runs += d.Runs
		if sum := d.CountedRuns + d.ErroredRuns + d.AbortedRuns + d.IncompleteRuns; d.Runs != sum {
			t.Errorf("cell %s: %d runs, but %d counted, errored, aborted or incomplete: %+v", c.CellKey, d.Runs, sum, d)
		}
	}
	if runs != 3 {
		t.Errorf("%d runs over the cells, want 3 (each run once)", runs)
	}
	if c := rep.Cell(a); c == nil || c.Data.Runs != 2 || c.Data.CountedRuns != 2 {
		t.Errorf("cell %s = %+v, want 2 runs, both counted (r0 by its finished attempt 1)", a, c)
	}
	if c := rep.Cell(b); c == nil || c.Data.Runs != 1 || c.Data.IncompleteRuns != 1 || c.Data.RunningAttempts != 2 {
		t.Errorf("cell %s = %+v, want 1 run (r1, incomplete) and 2 running attempts", b, c)
	}
}
