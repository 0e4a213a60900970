package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

func TestComputeContext(t *testing.T) {
	w := ingest(t, warehousetest.ContextStudy("ctxs"))
	res := mustCompute(t, w.DB(), "ctxs")
	c, err := ComputeContext(warehousetest.Context(t, time.Minute), SQLQuerier(w.DB()), "ctxs", res.Cells)
	if err != nil || c == nil {
		t.Fatalf("ComputeContext = %v, %v", c, err)
	}
	if len(c.Groups) != 2 {
		t.Fatalf("%d groups, want T0 and T2 at 1000", len(c.Groups))
	}
	t0, t2 := c.Groups[0], c.Groups[1]
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"T0 key", fmt.Sprint(t0.Model, t0.Tier, t0.Budget, t0.Cells), "mT01000 2"},
		{"T0 runs, successes, overflows", [3]int{t0.Runs, t0.Successes, t0.Overflows}, [3]int{8, 4, 4}},
		{"T2 runs, successes, overflows, recall runs", [4]int{t2.Runs, t2.Successes, t2.Overflows, t2.RecallRuns}, [4]int{8, 6, 0, 2}},
		// T0: seeds 0 and 1 stop at their last turn (1 and 2 requests), seeds 2, 3 make 4 and 5.
		{"T0 turns", t0.Turns, (1.0 + 2 + 4 + 5) * 2 / 8},
		{"T2 turns", t2.Turns, (2.0 + 3 + 4 + 5) * 2 / 8},
		{"T0 peak", t0.PeakContext, (150.0 + 300 + 600 + 750) * 2 / 8},
		{"T2 recalls, elisions", [2]float64{t2.Recalls, t2.Elisions}, [2]float64{0.25, 0.25}},
	} {
		if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	// Each cell has four runs: RR is defined, and the group's is the mean of its two cells'.
	var rr []float64
	for _, cell := range res.Cells {
		if cell.Condition == "c_T2_plantrue" || cell.Condition == "c_T2_planfalse" {
			rr = append(rr, cell.Metrics.RR.Value.V)
		}
	}
	if !t2.RR.Valid || len(rr) != 2 || t2.RR.V != (rr[0]+rr[1])/2 {
		t.Errorf("T2 RR = %+v, want the mean of %v", t2.RR, rr)
	}
	if len(c.Comparisons) != 3 {
		t.Fatalf("%d comparisons, want T2 vs T0 and planning in T0 and T2", len(c.Comparisons))
	}
	tier := c.Comparisons[0]
	if tier.Factor != "tier" || tier.B != "T2" || tier.Pairs != 8 || tier.Disc != [2]int{2, 4} || !tier.P.Valid || !tier.PAdjusted.Valid {
		t.Errorf("tier comparison %+v, want 8 pairs, 2 lost and 4 won by T2", tier)
	}
	if p := c.Comparisons[1]; p.Factor != "planning" || p.Pairs != 4 || p.Disc != [2]int{0, 0} || p.SuccessA != 0.5 {
		t.Errorf("planning comparison in T0 %+v, want 4 pairs without discordance", p)
	}
	if !tier.TokensP.Valid || !tier.TurnsP.Valid || tier.TurnsB <= tier.TurnsA {
		t.Errorf("tier comparison tokens p %+v, turns %v → %v p %+v: want defined and more turns under T2", tier.TokensP, tier.TurnsA, tier.TurnsB, tier.TurnsP)
	}
}

// TestContextComparisonSkipped: two conditions of one tier that differ only in what pairing does
// not see (here the recent window) make the tier's comparison with T0 ambiguous; the section
// skips it, says which and why, and keeps the comparisons it can make.
func TestContextComparisonSkipped(t *testing.T) {
	var runs []contextRun
	for seed := range int64(3) {
		for _, c := range []struct {
			cond, tier string
			plan       bool
		}{{"t0", "T0", false}, {"t0_plan", "T0", true}, {"t4", "T4", false}, {"t4_recent5", "T4", false}} {
			comps := []string{"circuit_breaker"}
			if c.plan {
				comps = append(comps, events.ComponentUpdatePlan)
			}
			runs = append(runs, contextRun{runSetting: runSetting{CellKey: CellKey{Task: "fix", Model: "m", Condition: c.cond}, seed: seed,
				components: comps, tier: c.tier, budget: 2000}, success: seed > 0, tokens: float64(100 * (seed + 1)), turns: 2})
		}
	}
	cs, skips, err := contextComparisons(runs)
	if err != nil {
		t.Fatalf("contextComparisons = %v, want the ambiguous comparison skipped", err)
	}
	if len(cs) != 1 || cs[0].Factor != "planning" || cs[0].Scope != "tier T0" || cs[0].Pairs != 3 {
		t.Errorf("comparisons %+v, want planning in T0 alone (3 pairs)", cs)
	}
	if len(skips) != 1 {
		t.Fatalf("skipped %+v, want T4 against T0 at 2000", skips)
	}
	s := skips[0]
	if s.Model != "m" || s.Factor != "tier" || s.A != "T0" || s.B != "T4" || s.Scope != "budget 2000" {
		t.Errorf("skipped %+v, want m tier T0 vs T4 at budget 2000", s)
	}
	for _, want := range []string{`"t4"`, `"t4_recent5"`, "recent window"} {
		if !strings.Contains(s.Reason, want) {
			t.Errorf("reason %q does not say %s", s.Reason, want)
		}
	}
}
