package analysis

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/metrics"
)

// testOpts keep the permutation tests cheap; the seed is fixed.
var testOpts = Options{Permutations: 200, Seed: 42}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestComputeMatchesMetrics(t *testing.T) {
	envs, want := harnessStudy("s1")
	w := ingest(t, envs)
	ctx := warehousetest.Context(t, 60*time.Second)
	rep, err := Compute(ctx, w.DB(), "s1", testOpts)
	if err != nil {
		t.Fatalf("Compute() = %v", err)
	}
	opts := testOpts.withDefaults()

	// Every cell: study.defined's six cells, each computed as metrics.ComputeCell computes the
	// runs built from the specs (not from the database).
	var keys []CellKey
	for _, c := range rep.Cells {
		keys = append(keys, c.CellKey)
		m, err := metrics.ComputeCell(want[c.CellKey], opts.Cell)
		if err != nil {
			t.Fatal(err)
		}
		if got, wantJSON := jsonOf(t, c.Metrics), jsonOf(t, m); got != wantJSON {
			t.Errorf("cell %s metrics =\n%s\nwant\n%s", c.CellKey, got, wantJSON)
		}
		if c.Data.CountedRuns != int64(len(want[c.CellKey])) {
			t.Errorf("cell %s counted %d runs, want %d", c.CellKey, c.Data.CountedRuns, len(want[c.CellKey]))
		}
	}
	wantKeys := []CellKey{{"credit_ecl", "sim-a", "baseline"}, {"credit_ecl", "sim-a", "harness"}, {"credit_ecl", "sim-a", "harness_sp"},
		{"kyc_check", "sim-a", "baseline"}, {"kyc_check", "sim-a", "harness"}, {"kyc_check", "sim-a", "missing"}}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("cells = %v, want %v", keys, wantKeys)
	}

	// Data accounting.
	byKey := map[CellKey]Cell{}
	for _, c := range rep.Cells {
		byKey[c.CellKey] = c
	}
	h := byKey[wantKeys[1]].Data
	if h.SupersededAttempts != 1 || h.SupersededFinished != 0 || h.IncompleteRuns != 1 || h.Runs != 13 || h.CountedRuns != 12 || *h.ExpectedRuns != 13 {
		t.Errorf("harness data = %+v, want 1 superseded (unfinished), 1 incomplete, 13 runs, 12 counted", h)
	}
	if sp := byKey[wantKeys[2]].Data; sp.SupersededAttempts != 1 || sp.SupersededFinished != 1 {
		t.Errorf("harness_sp data = %+v, want 1 superseded finished attempt", sp)
	}
	if m := byKey[wantKeys[5]]; m.Metrics.N != 0 || m.Data.Runs != 0 || *m.Data.ExpectedRuns != 2 {
		t.Errorf("missing cell = %+v, want N = 0 with 2 expected", m)
	}

	// Aborted runs are counted in the data, not scored.
	if b := byKey[wantKeys[0]].Data; b.AbortedRuns == 0 || b.AbortedRuns+b.CountedRuns != 13 || b.Runs != 13 {
		t.Errorf("baseline data = %+v, want aborted runs beside the scored ones, 13 in all", b)
	}
	// Errored runs are counted with their cause, not scored.
	kb := byKey[wantKeys[3]].Data
	wantCause := []Cause{{Kind: events.CauseMissingKey, Permanent: true, Detail: "OPENAI_API_KEY is not set", Runs: 2}}
	if kb.ErroredRuns != 2 || kb.CountedRuns != 1 || kb.Runs != 3 || !slices.Equal(kb.Causes, wantCause) {
		t.Errorf("kyc baseline data = %+v, want 2 errored (missing_key), 1 scored of 3 runs", kb)
	}
	// A finished run whose history has a gap is incomplete, not scored.
	if kh := byKey[wantKeys[4]].Data; kh.IncompleteRuns != 1 || kh.FoldErrors != 1 || kh.CountedRuns != 3 || kh.Runs != 4 {
		t.Errorf("kyc harness data = %+v, want 1 incomplete (fold error) beside 3 scored of 4 runs", kh)
	}
	// N = 1: pairwise metrics and their SEs are null.
	one := byKey[wantKeys[3]].Metrics
	if one.N != 1 || one.RR.Value.Valid || one.DI.Value.Valid || one.TSS.Value.Valid || one.AC.Value.Valid || one.RR.SE.Valid {
		t.Errorf("one-run cell = %s, want N = 1 and null pairwise metrics", jsonOf(t, one))
	}
	// All runs failed: success 0 with a Wilson interval, pass^k 0.
	failed := byKey[wantKeys[4]].Metrics
	if failed.Success.Rate != metrics.Some(0) || !failed.Success.WilsonHi.Valid || failed.Success.WilsonHi.V <= 0 {
		t.Errorf("all-failed success = %+v, want rate 0 and a Wilson interval", failed.Success)
	}
	for _, pk := range failed.PassK {
		if pk.Value != 0 {
			t.Errorf("all-failed pass^%d = %v, want 0", pk.K, pk.Value)
		}
	}

	// Comparisons: each condition against baseline, harness_sp against harness; paired study,
	// so McNemar too. Each equals metrics.Compare on the spec's runs with the same seed.
	type pair struct{ task, a, b string }
	pairs := []pair{{"credit_ecl", "baseline", "harness"}, {"credit_ecl", "baseline", "harness_sp"},
		{"credit_ecl", "harness", "harness_sp"}, {"kyc_check", "baseline", "harness"}, {"kyc_check", "baseline", "missing"}}
	var wantCmp []Comparison
	for _, p := range pairs {
		ka, kb := CellKey{p.task, "sim-a", p.a}, CellKey{p.task, "sim-a", p.b}
		cs, err := metrics.Compare(want[ka], want[kb], opts.compareConfig(ka.String(), kb.String()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			wantCmp = append(wantCmp, Comparison{Task: p.task, Model: "sim-a", ConditionA: p.a, ConditionB: p.b, Comparison: c})
		}
	}
	adjust(wantCmp)
	// 8 per pair, but no McNemar against the empty cell "missing".
	if len(rep.Comparisons) != len(wantCmp) || len(wantCmp) != 5*8-1 {
		t.Fatalf("%d comparisons, want %d (= 5 pairs × 8 − 1)", len(rep.Comparisons), len(wantCmp))
	}
	for i := range wantCmp {
		if got, w := jsonOf(t, rep.Comparisons[i]), jsonOf(t, wantCmp[i]); got != w {
			t.Errorf("comparison %d =\n%s\nwant\n%s", i, got, w)
		}
	}
	quantities := map[string]int{}
	var withP int
	for _, c := range rep.Comparisons {
		quantities[c.Quantity+"/"+c.Test]++
		switch {
		case c.P.Valid:
			withP++
			if !c.PAdjusted.Valid || c.PAdjusted.V < c.P.V || c.Significant != (c.PAdjusted.V < metrics.FDRLevel) {
				t.Errorf("comparison %s %s %s: p %v, adjusted %v, significant %v", c.CellB, c.Quantity, c.Test, c.P, c.PAdjusted, c.Significant)
			}
		case c.Reason == "" || c.PAdjusted.Valid:
			t.Errorf("comparison %s %s without p has reason %q, adjusted %v", c.CellB, c.Quantity, c.Reason, c.PAdjusted)
		}
	}
	for _, q := range []string{"success/fisher_exact", "success/mcnemar_exact", "rr/permutation", "di/permutation", "tss/permutation", "ac/permutation", "tokens/mann_whitney_u", "latency_ms/mann_whitney_u"} {
		n := len(pairs)
		if q == "success/mcnemar_exact" {
			n-- // not against an empty cell
		}
		if quantities[q] != n {
			t.Errorf("%d comparisons of %s, want %d", quantities[q], q, n)
		}
	}
	if withP < 24 {
		t.Errorf("%d comparisons have a p-value, want at least 24", withP)
	}
	if len(rep.Notes) == 0 {
		t.Error("no notes, want the superseded, incomplete and one-run notes")
	}
}

func TestComputeDeterministic(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	// The same events, published in another order, into another database.
	shuffled := slices.Clone(envs)
	rand.New(rand.NewPCG(3, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	w2 := ingest(t, shuffled)
	ctx := warehousetest.Context(t, 60*time.Second)
	var outs []string
	for _, r := range []*Result{mustCompute(t, w.DB(), "s1"), mustCompute(t, w.DB(), "s1"), mustCompute(t, w2.DB(), "s1")} {
		outs = append(outs, jsonOf(t, r))
	}
	for i := 1; i < len(outs); i++ {
		if outs[0] != outs[i] {
			t.Errorf("result %d differs from result 0:\n%s\n---\n%s", i, outs[i], outs[0])
		}
	}
	if strings.Contains(outs[0], "NaN") || strings.Contains(outs[0], "Inf") {
		t.Error("result holds NaN or Inf")
	}
	// A different seed changes permutation p-values but not the cells.
	other, err := Compute(ctx, w.DB(), "s1", Options{Permutations: 200, Seed: 43})
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, other.Cells) != jsonOf(t, mustCompute(t, w.DB(), "s1").Cells) {
		t.Error("cells depend on the permutation seed")
	}
}

func TestComputeErrors(t *testing.T) {
	envs, _ := harnessStudy("s1")
	// A study whose only run never finished.
	s := &synth{study: "s2"}
	s.add(runSpec{cell: CellKey{"t", "m", "baseline"}, run: "r0", attempt: 1, unfinished: true,
		steps: []step{{state: "a", tool: "x", args: map[string]any{}}}, tokens: [2]int64{1, 1}})
	w := ingest(t, append(envs, s.envs...))
	ctx := warehousetest.Context(t, 30*time.Second)
	tests := []struct {
		name    string
		study   string
		opts    Options
		wantErr error
	}{
		{"unknown study", "nope", testOpts, ErrNoStudy},
		{"no finished run", "s2", testOpts, ErrNoRuns},
		{"empty study name", "", testOpts, ErrInvalidOptions},
		{"negative permutations", "s1", Options{Permutations: -1}, ErrInvalidOptions},
		{"bad pair", "s1", Options{Pairs: []Pair{{A: "*", B: "x"}}}, ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compute(ctx, w.DB(), tt.study, tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Compute(%q) = %v, want %v", tt.study, err, tt.wantErr)
			}
		})
	}
}
