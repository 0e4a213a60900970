package report

import (
	"testing"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

func TestIsBad(t *testing.T) {
	for _, tc := range []struct {
		name string
		give metrics.Comparison
		want bool
	}{
		{"rr down", metrics.Comparison{Quantity: metrics.QuantityRR, Difference: metrics.Some(-0.2), Significant: true}, true},
		{"rr up", metrics.Comparison{Quantity: metrics.QuantityRR, Difference: metrics.Some(0.2), Significant: true}, false},
		{"success down", metrics.Comparison{Quantity: metrics.QuantitySuccess, Difference: metrics.Some(-0.1), Significant: true}, true},
		{"tokens up", metrics.Comparison{Quantity: metrics.QuantityTokens, Difference: metrics.Some(100), Significant: true}, true},
		{"latency down", metrics.Comparison{Quantity: metrics.QuantityLatency, Difference: metrics.Some(-5), Significant: true}, false},
		{"not significant", metrics.Comparison{Quantity: metrics.QuantityAC, Difference: metrics.Some(-0.5)}, false},
		{"no difference", metrics.Comparison{Quantity: metrics.QuantityDI, Difference: metrics.Null, Significant: true}, false},
	} {
		if got := IsBad(tc.give); got != tc.want {
			t.Errorf("IsBad(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestChangeName(t *testing.T) {
	harness := []string{"circuit_breaker", "forced_tool", "fsm", "permission_gate", "retry", "schema_gate", "validation"}
	sp := append(append([]string{}, harness[:6]...), "structured_planning", "validation")
	cells := []CellInfo{
		{CellKey: analysis.CellKey{Task: "t", Model: "m", Condition: "baseline"}, Components: []string{}},
		{CellKey: analysis.CellKey{Task: "t", Model: "m", Condition: "harness"}, Components: harness},
		{CellKey: analysis.CellKey{Task: "t", Model: "m", Condition: "harness_sp"}, Components: sp},
		{CellKey: analysis.CellKey{Task: "t", Model: "m", Condition: "gated"}, Components: []string{"schema_gate"}},
	}
	for _, tc := range []struct {
		a, b       string
		production bool
		want       string
	}{
		{"baseline", "harness", false, "The harness"},
		{"baseline", "harness_sp", false, "The harness with Structured Planning"},
		{"harness", "harness_sp", false, "Structured Planning"},
		{"harness_sp", "harness", false, "Removing Structured Planning"},
		{"baseline", "gated", false, "The argument-schema gate"},
		{"baseline", "fsm+retry", false, "The fsm+retry condition (finite-state execution and bounded retry)"},
		{"r1", "r2", true, "Release r2 (after r1)"},
	} {
		if got := changeName(cells, "t", "m", tc.a, tc.b, tc.production); got != tc.want {
			t.Errorf("changeName(%s → %s) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestStudyFindings: the sentence is made of the comparison's numbers, with the change's
// median latency and token cost; n.s. comparisons make none; a second test of the same
// quantity does not repeat it.
func TestStudyFindings(t *testing.T) {
	cmp := func(q string, a, b, padj float64, sig bool) analysis.Comparison {
		return analysis.Comparison{Task: "credit_ecl", Model: "sim-steady", ConditionA: "harness", ConditionB: "harness_sp",
			Comparison: metrics.Comparison{Quantity: q, ValueA: metrics.Some(a), ValueB: metrics.Some(b), Difference: metrics.Some(b - a),
				P: metrics.Some(padj / 2), PAdjusted: metrics.Some(padj), Significant: sig}}
	}
	mr := &analysis.Result{Study: analysis.Study{SourceKind: "harness"}, Comparisons: []analysis.Comparison{
		cmp(metrics.QuantitySuccess, 0.9, 1, 0.03, true),
		cmp(metrics.QuantitySuccess, 0.9, 1, 0.04, true), // McNemar after Fisher
		cmp(metrics.QuantityRR, 0.41, 1, 0.00004, true),
		cmp(metrics.QuantityDI, 0.8, 0.82, 0.4, false),
		cmp(metrics.QuantityTokens, 3000, 2700, 0.01, true),
		cmp(metrics.QuantityLatency, 1000, 1120, 0.2, false),
	}}
	cells := []CellInfo{{CellKey: analysis.CellKey{Task: "credit_ecl", Model: "sim-steady", Condition: "harness_sp"}, Simulated: true,
		Components: []string{"structured_planning"}}, {CellKey: analysis.CellKey{Task: "credit_ecl", Model: "sim-steady", Condition: "harness"}, Components: []string{}}}
	got := studyFindings(mr, cells)
	want := []string{
		"Structured Planning raised the success rate from 0.90 to 1.00 for sim-steady (simulated) on credit_ecl, q = 0.0300, at +12% median latency and -10% median tokens per run.",
		"Structured Planning raised RR from 0.41 to 1.00 for sim-steady (simulated) on credit_ecl, q = 4.0e-05, at +12% median latency and -10% median tokens per run.",
		"Structured Planning lowered median tokens per run from 3000 to 2700 for sim-steady (simulated) on credit_ecl, q = 0.0100.",
	}
	if len(got) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Sentence != want[i] {
			t.Errorf("finding %d = %q\nwant %q", i, got[i].Sentence, want[i])
		}
		if got[i].Bad {
			t.Errorf("finding %d is bad; every change here is an improvement", i)
		}
	}
}
