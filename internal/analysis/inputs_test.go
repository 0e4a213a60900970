package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/metrics"
)

// TestProductionWithinInputGroups: production runs of 4 invoices × 5 repeats in release r1
// (invoices 0 and 1 reproduced exactly, invoice 2 in 4 of 5 runs, invoice 3 split 3 and 2) and
// the same invoices reproduced exactly in r2, through nats-server and DuckDB. RR is taken
// within input groups: r1's is (20 + 20 + 12 + 6 + 2) / (4 · 20) = 0.75, not the 60 / 380
// that pooling different invoices gives; both figures are recomputed from run_folds with SQL.
// The cells say they stand on 4 input groups, the release comparison is stratified by input,
// and a cell whose inputs are all different has null pairwise metrics and says why.
func TestProductionWithinInputGroups(t *testing.T) {
	s := &synth{study: "prodinv"}
	variant := map[[2]int]bool{{2, 4}: true, {3, 3}: true, {3, 4}: true}
	for _, release := range []string{"r1", "r2"} {
		cell := CellKey{"invoice_triage", "gpt-4o-mini", release}
		for inv := 0; inv < 4; inv++ {
			for rep := 0; rep < 5; rep++ {
				steps := []step{{state: "fetch", tool: "fetch_invoice", args: map[string]any{"invoice_id": fmt.Sprintf("INV-%d", 1000+inv)}},
					{state: "route", tool: "route", args: map[string]any{"queue": fmt.Sprintf("q%d", inv)}}}
				if release == "r1" && variant[[2]int{inv, rep}] {
					steps = append(steps, step{state: "review", tool: "lookup_vendor", args: map[string]any{"vendor": 1}})
				}
				s.add(runSpec{cell: cell, run: fmt.Sprintf("%s-%d-%d", release, inv, rep), attempt: 1, input: inv, seed: rep,
					source: events.SourceProduction, sourceID: "invoice-agent", inputKey: fmt.Sprintf("INV-%d", 1000+inv),
					steps: steps, output: map[string]any{"queue": fmt.Sprintf("q%d", inv)}, status: events.StatusSucceeded, success: true,
					tokens: [2]int64{100, 10}, latencyMS: 50, start: 0})
			}
		}
	}
	// r3: five runs of five different invoices.
	for inv := 0; inv < 5; inv++ {
		s.add(runSpec{cell: CellKey{"invoice_triage", "gpt-4o-mini", "r3"}, run: fmt.Sprintf("r3-%d", inv), attempt: 1, input: inv,
			source: events.SourceProduction, sourceID: "invoice-agent", inputKey: fmt.Sprintf("INV-%d", 2000+inv),
			steps:  []step{{state: "fetch", tool: "fetch_invoice", args: map[string]any{"invoice_id": inv}}},
			output: map[string]any{"queue": "q"}, status: events.StatusSucceeded, success: true, tokens: [2]int64{100, 10}, latencyMS: 50})
	}
	w := ingest(t, s.envs)
	rep := mustCompute(t, w.DB(), "prodinv")
	if rep.Study.SourceKind != SourceProduction {
		t.Fatalf("study source kind %q, want production", rep.Study.SourceKind)
	}

	// The recomputation from the projection, in SQL: agreeing pairs within input groups over
	// the pairs within input groups, and the same pooled across inputs.
	recompute := func(release string, withinInputs bool) float64 {
		t.Helper()
		group := ""
		if withinInputs {
			group = "input_key, "
		}
		q := `WITH r AS (SELECT * FROM run_folds WHERE study = 'prodinv' AND condition = ? AND status = 'succeeded')
		SELECT (SELECT sum(n * (n - 1)) FROM (SELECT count(*) AS n FROM r GROUP BY ` + group + `sig_trace))
		     / (SELECT sum(n * (n - 1)) FROM (SELECT count(*) AS n FROM r GROUP BY ` + group + `true))`
		var v float64
		if err := w.DB().QueryRow(q, release).Scan(&v); err != nil {
			t.Fatalf("recompute %s: %v", release, err)
		}
		return v
	}
	r1 := rep.Cell(CellKey{"invoice_triage", "gpt-4o-mini", "r1"})
	if got, want := r1.Metrics.RR.Value, recompute("r1", true); !got.Valid || math.Abs(got.V-want) > 1e-12 || math.Abs(want-0.75) > 1e-12 {
		t.Errorf("r1 RR = %v, recomputed within input groups %v, want 0.75", got, want)
	}
	if across := recompute("r1", false); math.Abs(across-60.0/380) > 1e-12 || math.Abs(r1.Metrics.RR.Value.V-across) < 0.5 {
		t.Errorf("r1 RR across inputs recomputed %v (want 60/380): the cell's %v must not be it", across, r1.Metrics.RR.Value)
	}
	if g := r1.Metrics.InputGroups; g == nil || *g != (metrics.InputGroups{Groups: 4, GroupedRuns: 20}) {
		t.Errorf("r1 input groups = %+v, want 4 groups of 20 runs", g)
	}
	if !r1.Metrics.RR.SE.Valid {
		t.Errorf("r1 RR has no SE over its 4 input groups")
	}
	r2 := rep.Cell(CellKey{"invoice_triage", "gpt-4o-mini", "r2"})
	if r2.Metrics.RR.Value != metrics.Some(1) {
		t.Errorf("r2 RR = %v, want 1 (every invoice reproduced)", r2.Metrics.RR.Value)
	}
	r3 := rep.Cell(CellKey{"invoice_triage", "gpt-4o-mini", "r3"})
	if r3.Metrics.N != 5 || r3.Metrics.RR.Value.Valid || r3.Metrics.InputGroups.SingleRuns != 5 {
		t.Errorf("r3: N %d, RR %v, groups %+v; want 5 runs counted, RR null, 5 single runs", r3.Metrics.N, r3.Metrics.RR.Value, r3.Metrics.InputGroups)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"within input groups", "invoice_triage/gpt-4o-mini/r3: no input seen twice"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	found := false
	for _, c := range rep.Comparisons {
		if c.ConditionA == "r1" && c.ConditionB == "r2" && c.Quantity == metrics.QuantityRR {
			found = true
			if c.ValueA != r1.Metrics.RR.Value || c.ValueB != r2.Metrics.RR.Value || c.Method != metrics.MethodStratified || !c.P.Valid {
				t.Errorf("r1 → r2 RR comparison = %+v, want the cells' within-group values, stratified by input", c.Comparison)
			}
		}
	}
	if !found {
		t.Errorf("no RR comparison r1 → r2 among %d", len(rep.Comparisons))
	}
}
