package analysis

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestCodingComparisons pairs runs across the levels of each factor and counts the discordant
// pairs: distilled succeeds where raw fails on every task for seed 0, never the reverse.
func TestCodingComparisons(t *testing.T) {
	raw, distilled := []string{"circuit_breaker"}, []string{"circuit_breaker", "distilled_diagnostics"}
	var runs []codingRun
	for _, task := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		for seed := int64(0); seed < 2; seed++ {
			runs = append(runs,
				codingRun{runSetting: runSetting{CellKey: CellKey{Task: task, Model: "m", Condition: "raw"}, seed: seed, components: raw}, success: seed == 1},
				codingRun{runSetting: runSetting{CellKey: CellKey{Task: task, Model: "m", Condition: "distilled"}, seed: seed, components: distilled},
					success: true, repatches: 2, latency: 100, verifyMS: 40})
		}
	}
	cs, skips, err := codingComparisons(runs)
	if err != nil || len(skips) != 0 {
		t.Fatal(err, skips)
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

// TestCodingComparisonsTierBudget: in a study that also varies the context tier and budget (and
// planning), a coding factor's pairs hold everything else equal. bash_only is switched at two
// tiers × two budgets × planning on and off; the run under bash succeeds exactly when its
// file-tools partner of the same tier, budget and planning failed, which only the right pairing
// sees: pairing on components alone (as the coding section once did) let the runs of one tier
// and budget overwrite another's, and counted 6 pairs of 24.
func TestCodingComparisonsTierBudget(t *testing.T) {
	var runs []codingRun
	for _, tier := range []string{"T0", "T4"} {
		for _, budget := range []int64{2000, 8000} {
			for _, plan := range []bool{false, true} {
				for seed := int64(0); seed < 3; seed++ {
					files, bash := []string{}, []string{"bash_only"}
					if plan {
						files, bash = []string{"update_plan"}, []string{"bash_only", "update_plan"}
					}
					// The file-tools run fails for T0 at 2000 and for planning off at 8000.
					ok := !(tier == "T0" && budget == 2000) && (plan || budget != 8000)
					set := runSetting{CellKey: CellKey{Task: "fix", Model: "m"}, seed: seed, tier: tier, budget: budget}
					f, b := set, set
					f.Condition, f.components = "files", files
					b.Condition, b.components = "bash", bash
					runs = append(runs, codingRun{runSetting: f, success: ok}, codingRun{runSetting: b, success: !ok})
				}
			}
		}
	}
	cs, skips, err := codingComparisons(runs)
	if err != nil || len(skips) != 0 {
		t.Fatal(err, skips)
	}
	if len(cs) != 1 || cs[0].Factor != "bash_only" {
		t.Fatalf("codingComparisons = %+v, want bash_only alone", cs)
	}
	c := cs[0]
	// 2 tiers × 2 budgets × 2 planning × 3 seeds = 24 pairs; the file tools fail in T0·2000 (6
	// runs) and in T4·8000 and T0·8000 without planning (3 + 3): 12 pairs won by bash.
	if c.Pairs != 24 || c.B != 12 || c.C != 12 {
		t.Errorf("bash_only: %d pairs, b = %d, c = %d; want 24 pairs, 12 and 12", c.Pairs, c.B, c.C)
	}
}

// TestPairRunsAmbiguous: two conditions alike in everything pairing sees are an error naming
// both, never a silent choice of one of them; the coding section skips that comparison and says
// why, and keeps the others.
func TestPairRunsAmbiguous(t *testing.T) {
	runs := []codingRun{
		{runSetting: runSetting{CellKey: CellKey{Task: "a", Model: "m", Condition: "x"}, components: []string{"bash_only"}, tier: "T4", budget: 8000}},
		{runSetting: runSetting{CellKey: CellKey{Task: "a", Model: "m", Condition: "y"}, components: []string{"bash_only"}, tier: "T4", budget: 8000}},
		{runSetting: runSetting{CellKey: CellKey{Task: "a", Model: "m", Condition: "z"}, components: []string{}, tier: "T4", budget: 8000}},
		{runSetting: runSetting{CellKey: CellKey{Task: "a", Model: "m", Condition: "w"}, components: []string{"distilled_diagnostics"}, tier: "T4", budget: 8000}},
	}
	_, err := pairRuns(runs, "bash_only", func(r *codingRun) *runSetting { return &r.runSetting }, func(r *codingRun) int {
		return countIf(slices.Contains(r.components, "bash_only"))
	})
	var pe *PairingError
	if !errors.Is(err, ErrPairing) || !errors.As(err, &pe) || pe.Conditions != [2]string{"x", "y"} {
		t.Fatalf("pairRuns of two conditions alike = %v, want a PairingError of x and y", err)
	}
	cs, skips, err := codingComparisons(runs)
	if err != nil {
		t.Fatalf("codingComparisons = %v, want the ambiguous comparison skipped", err)
	}
	if len(cs) != 1 || cs[0].Factor != "distilled_diagnostics" || cs[0].Pairs != 1 {
		t.Errorf("codingComparisons = %+v, want distilled_diagnostics (z against w) alone", cs)
	}
	if len(skips) != 1 || skips[0].Factor != "bash_only" || skips[0].Model != "m" {
		t.Fatalf("skipped = %+v, want bash_only", skips)
	}
	for _, c := range []string{`"x"`, `"y"`, "recent window"} {
		if !strings.Contains(skips[0].Reason, c) {
			t.Errorf("reason %q does not say %s", skips[0].Reason, c)
		}
	}
}
