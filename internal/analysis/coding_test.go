package analysis

import (
	"math"
	"testing"
)

// TestCodingComparisons pairs runs across the levels of each factor and counts the discordant
// pairs: distilled succeeds where raw fails on every task for seed 0, never the reverse.
func TestCodingComparisons(t *testing.T) {
	comps := map[string][]string{
		"raw":       {"circuit_breaker"},
		"distilled": {"circuit_breaker", "distilled_diagnostics"},
	}
	var runs []codingRun
	for _, task := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		for seed := int64(0); seed < 2; seed++ {
			runs = append(runs,
				codingRun{key: CellKey{Task: task, Model: "m", Condition: "raw"}, seed: seed, success: seed == 1},
				codingRun{key: CellKey{Task: task, Model: "m", Condition: "distilled"}, seed: seed, success: true, repatches: 2, latency: 100, verifyMS: 40})
		}
	}
	cs, err := codingComparisons(runs, comps)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("codingComparisons = %+v, want one (only distilled_diagnostics varies)", cs)
	}
	c := cs[0]
	if c.Factor != "distilled_diagnostics" || c.Pairs != 14 || c.B != 0 || c.C != 7 || c.SuccessA != 0.5 || c.SuccessB != 1 {
		t.Errorf("comparison %+v, want 14 pairs, b = 0, c = 7, success 0.5 → 1", c)
	}
	// Exact McNemar on (0, 7): p = 2 × 0.5^7.
	if !c.P.Valid || math.Abs(c.P.V-2*0.0078125) > 1e-12 || !c.Significant {
		t.Errorf("p = %v (significant %v), want 0.015625 and significant", c.P, c.Significant)
	}
	cells := codingCells(runs)
	if len(cells) != 14 {
		t.Fatalf("%d cells, want 14", len(cells))
	}
	for _, cell := range cells {
		if cell.Condition == "distilled" && (cell.Repatches != 2 || cell.VerificationShare != 0.4 || cell.Successes != 2) {
			t.Errorf("cell %+v, want 2 re-patches per run, verification share 0.4, 2 successes", cell)
		}
	}
}

func TestCodingComparisonsUnknownCondition(t *testing.T) {
	runs := []codingRun{{key: CellKey{Task: "a", Model: "m", Condition: "nope"}}}
	if _, err := codingComparisons(runs, map[string][]string{}); err == nil {
		t.Error("codingComparisons with a condition of unknown components: no error")
	}
}
