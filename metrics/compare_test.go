package metrics

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func byQuantityTest(cs []Comparison) map[string]Comparison {
	m := map[string]Comparison{}
	for _, c := range cs {
		m[c.Quantity+"/"+c.Test] = c
	}
	return m
}

func TestCompareHarnessAgainstBaseline(t *testing.T) {
	// A baseline whose tool order varies as much as its arguments, against
	// a harnessed cell: every metric should differ.
	base := genRuns(60, shapeAdversarial, 1)
	harn := genRuns(60, shapeFew, 2)
	cfg := CompareConfig{CellA: "baseline", CellB: "harness", Permutations: 500, Seed: 3}
	cs, err := Compare(base, harn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	AdjustBH(cs)
	got := byQuantityTest(cs)
	for _, key := range []string{"success/fisher_exact", "success/mcnemar_exact", "rr/permutation", "di/permutation",
		"tss/permutation", "ac/permutation", "tokens/mann_whitney_u", "latency_ms/mann_whitney_u"} {
		c, ok := got[key]
		if !ok {
			t.Errorf("no %s comparison", key)
			continue
		}
		if !c.P.Valid || !c.PAdjusted.Valid || c.Reason != "" {
			t.Errorf("%s: p %v, adjusted %v, reason %q", key, c.P, c.PAdjusted, c.Reason)
		}
		if c.CellA != "baseline" || c.CellB != "harness" || c.NA != 60 || c.NB != 60 {
			t.Errorf("%s: labels %+v", key, c)
		}
	}
	// The harnessed cell is far more reproducible: the smallest p a
	// permutation test with B = 500 can give is 1/501.
	for _, q := range []string{"rr", "di", "tss", "ac"} {
		c := got[q+"/permutation"]
		if c.P.V > 2.0/501 || !c.Significant || !(c.Difference.V > 0) {
			t.Errorf("%s: %+v, want a significant increase", q, c)
		}
		if c.Statistic != c.Difference && !nearValue(c.Statistic, c.Difference, 1e-12) {
			t.Errorf("%s: statistic %v, difference %v (exact path: equal)", q, c.Statistic, c.Difference)
		}
	}
	if c := got["latency_ms/mann_whitney_u"]; c.Method != MethodAsymptotic || !c.EffectSize.Valid {
		t.Errorf("latency: %+v", c)
	}
	// Reproducible: same seed, byte-identical JSON.
	cs2, _ := Compare(base, harn, cfg)
	AdjustBH(cs2)
	j1, _ := json.Marshal(cs)
	j2, _ := json.Marshal(cs2)
	if string(j1) != string(j2) {
		t.Error("Compare is not reproducible with the same seed")
	}
}

func TestCompareIdenticalCells(t *testing.T) {
	runs := genRuns(40, shapeFew, 5)
	cs, err := Compare(runs, runs, CompareConfig{Permutations: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Difference.Valid && c.Difference.V != 0 {
			t.Errorf("%s/%s: difference %v between identical cells", c.Quantity, c.Test, c.Difference)
		}
		if c.P.Valid && c.P.V < 0.5 {
			t.Errorf("%s/%s: p = %v between identical cells", c.Quantity, c.Test, c.P)
		}
	}
}

func TestCompareEmptySide(t *testing.T) {
	cs, err := Compare(nil, genRuns(10, shapeFew, 1), CompareConfig{Permutations: 10})
	if err != nil {
		t.Fatal(err)
	}
	AdjustBH(cs)
	if len(cs) == 0 {
		t.Fatal("no comparisons")
	}
	for _, c := range cs {
		if c.P.Valid || c.PAdjusted.Valid || c.Significant || c.Reason == "" {
			t.Errorf("%s/%s with an empty side: %+v", c.Quantity, c.Test, c)
		}
	}
	b, _ := json.Marshal(cs)
	if strings.Contains(string(b), "NaN") {
		t.Errorf("NaN in %s", b)
	}
}

func TestCompareOneRunSide(t *testing.T) {
	cs, err := Compare(genRuns(1, shapeFew, 1), genRuns(10, shapeFew, 2), CompareConfig{Permutations: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := byQuantityTest(cs)
	if c := got["rr/permutation"]; c.P.Valid || c.Reason == "" {
		t.Errorf("RR with a one-run cell: %+v", c)
	}
	if c := got["success/fisher_exact"]; !c.P.Valid {
		t.Errorf("success with a one-run cell: %+v", c)
	}
}

func TestCompareInvalidConfig(t *testing.T) {
	_, err := Compare(nil, nil, CompareConfig{Permutations: -1})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Compare(Permutations: -1) error = %v, want ErrInvalidOptions", err)
	}
}

// The fast permutation path of Compare must give exactly the p-values of
// the generic PermutationTest (same seed, same permutations).
func TestCompareMatchesGenericPermutationTest(t *testing.T) {
	a := genRuns(25, shapeDistinct, 1)
	b := simCell(30, rand.New(rand.NewPCG(1, 1)))
	const B, seed = 200, 77
	cs, err := Compare(a, b, CompareConfig{Permutations: B, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	got := byQuantityTest(cs)
	stats := map[string]func(CellMetrics) Value{
		"rr":  func(m CellMetrics) Value { return m.RR.Value },
		"di":  func(m CellMetrics) Value { return m.DI.Value },
		"tss": func(m CellMetrics) Value { return m.TSS.Value },
		"ac":  func(m CellMetrics) Value { return m.AC.Value },
	}
	for q, f := range stats {
		delta, p, err := PermutationTest(a, b, func(rs []Run) Value {
			m, err := ComputeCell(rs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return f(m)
		}, B, seed)
		if err != nil {
			t.Fatal(err)
		}
		c := got[q+"/permutation"]
		if !nearValue(delta, c.Statistic, 1e-12) || p != c.P {
			t.Errorf("%s: PermutationTest = (%v, %v), Compare = (%v, %v)", q, delta, p, c.Statistic, c.P)
		}
	}
}

func TestPermutationTestErrorsAndReproducibility(t *testing.T) {
	stat := func(rs []Run) Value {
		var s float64
		for _, r := range rs {
			s += r.LatencyMS
		}
		return Some(s / float64(len(rs)))
	}
	if _, _, err := PermutationTest(nil, genRuns(3, shapeFew, 1), stat, 10, 1); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty side: error %v, want ErrEmpty", err)
	}
	if _, _, err := PermutationTest(genRuns(3, shapeFew, 1), genRuns(3, shapeFew, 2), stat, 0, 1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("B = 0: error %v, want ErrInvalidArgument", err)
	}
	a, b := genRuns(20, shapeFew, 1), genRuns(20, shapeFew, 2)
	for i := range b {
		b[i].LatencyMS += 400
	}
	d1, p1, _ := PermutationTest(a, b, stat, 999, 5)
	d2, p2, _ := PermutationTest(a, b, stat, 999, 5)
	if d1 != d2 || p1 != p2 {
		t.Errorf("not reproducible: (%v, %v) vs (%v, %v)", d1, p1, d2, p2)
	}
	if p1.V != 1.0/1000 {
		t.Errorf("a 400 ms shift gave p = %v, want the minimum 1/1000", p1)
	}
	undefined := func([]Run) Value { return Null }
	if d, p, err := PermutationTest(a, b, undefined, 10, 1); err != nil || d.Valid || p.Valid {
		t.Errorf("undefined statistic: (%v, %v, %v), want nulls", d, p, err)
	}
}

func TestAdjustBH(t *testing.T) {
	cs := []Comparison{{P: Some(0.01)}, {P: Null}, {P: Some(0.04)}, {P: Some(0)}, {P: Some(1)}}
	AdjustBH(cs)
	want := []Value{Some(0.02), Null, Some(0.04 * 4 / 3), Some(0), Some(1)}
	wantSig := []bool{true, false, false, true, false}
	for i := range cs {
		if !nearValue(cs[i].PAdjusted, want[i], 1e-15) || cs[i].Significant != wantSig[i] {
			t.Errorf("AdjustBH[%d] = (%v, %v), want (%v, %v)", i, cs[i].PAdjusted, cs[i].Significant, want[i], wantSig[i])
		}
	}
	AdjustBH(nil) // must not panic
}

func TestComparisonJSONFields(t *testing.T) {
	c := Comparison{Quantity: "rr", P: Null, ValueA: Some(0.5)}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"quantity", "cell_a", "cell_b", "value_a", "value_b", "difference", "test", "statistic", "p", "p_se", "p_adjusted", "significant"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if m["p"] != nil || m["value_a"] != 0.5 {
		t.Errorf("JSON values: %s", b)
	}
	var back Comparison
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// Beyond PermExactDistinct the permutation statistic of TSS and AC is
// estimated per replicate; the test must still separate clearly different
// cells and say that it sampled.
func TestCompareSampledPermutation(t *testing.T) {
	base := genRuns(80, shapeAdversarial, 1)
	harn := genRuns(80, shapeFew, 2)
	cs, err := Compare(base, harn, CompareConfig{Permutations: 200, Seed: 1, PermExactDistinct: 1, PermSamplePairs: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := byQuantityTest(cs)
	for _, q := range []string{"tss", "ac"} {
		c := got[q+"/permutation"]
		if c.Method != "sampled" || !c.P.Valid || c.P.V > 2.0/201 {
			t.Errorf("%s: %+v, want a sampled test with the minimum p", q, c)
		}
	}
	if c := got["rr/permutation"]; c.Method != "" {
		t.Errorf("rr: method %q, want exact (empty)", c.Method)
	}
}

// TestCompareEffectSizeSign: Cliff's δ reads like Difference (B − A). Cell
// B uses fewer tokens than A in every run, so the difference of medians and
// δ are both negative; every latency of B exceeds A's, so both are positive.
func TestCompareEffectSizeSign(t *testing.T) {
	a := []Run{{Tokens: 6000, LatencyMS: 10}, {Tokens: 6400, LatencyMS: 12}, {Tokens: 6600, LatencyMS: 11}}
	b := []Run{{Tokens: 3000, LatencyMS: 20}, {Tokens: 3100, LatencyMS: 25}, {Tokens: 3300, LatencyMS: 22}}
	cs, err := Compare(a, b, CompareConfig{Permutations: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := byQuantityTest(cs)
	for _, tc := range []struct {
		key       string
		wantDelta float64
	}{
		{"tokens/mann_whitney_u", -1},
		{"latency_ms/mann_whitney_u", 1},
	} {
		c := got[tc.key]
		if !c.EffectSize.Valid || c.EffectSize.V != tc.wantDelta || (c.Difference.V > 0) != (tc.wantDelta > 0) {
			t.Errorf("%s: effect size %v, difference %v; want δ = %v with the sign of B − A", tc.key, c.EffectSize, c.Difference, tc.wantDelta)
		}
	}
}

// McNemar pairs runs by key: b counts the pairs where only A succeeded, c
// where only B did; keys of one cell alone are left out, and a key repeated
// within a cell stops the test with a reason.
func TestCompareMcNemarPairing(t *testing.T) {
	run := func(key string, ok bool) Run { return Run{PairKey: key, Success: ok} }
	a := []Run{run("k1", true), run("k2", true), run("k3", false), run("k4", false), run("k5", true), run("onlyA", true)}
	b := []Run{run("k5", true), run("k4", true), run("k3", true), run("k2", false), run("k1", false), run("onlyB", false)}
	for _, tc := range []struct {
		name       string
		a, b       []Run
		wantB      float64 // the statistic b; -1: no p, a reason
		wantReason string
	}{
		{"pairs", a, b, 2, ""},
		{"repeat in A", append(slices.Clone(a), run("k2", false)), b, -1, `pair key "k2" repeats in cell A`},
		{"repeat in B", a, append(slices.Clone(b), run("onlyB", true)), -1, `pair key "onlyB" repeats in cell B`},
		{"nothing shared", a[:2], b[5:], -1, "no run of cell B shares a pair key with cell A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Compare(tc.a, tc.b, CompareConfig{Permutations: 10})
			if err != nil {
				t.Fatal(err)
			}
			c, ok := byQuantityTest(cs)["success/mcnemar_exact"]
			switch {
			case !ok:
				t.Fatal("no McNemar comparison")
			case tc.wantB < 0 && (c.P.Valid || c.Reason != tc.wantReason):
				t.Errorf("p %v, reason %q; want no p and reason %q", c.P, c.Reason, tc.wantReason)
			case tc.wantB >= 0 && (!c.P.Valid || c.Statistic != Some(tc.wantB) || c.Note != "5 pairs; b = 2 (A succeeded, B failed), c = 2 (A failed, B succeeded)"):
				t.Errorf("statistic %v, p %v, note %q; want b = %v over 5 pairs", c.Statistic, c.P, c.Note, tc.wantB)
			}
		})
	}
}
