package metrics

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// invoiceRun is a production run of the invoice agent on input inv: it fetches that invoice
// and classifies it; variant != 0 takes another path (an extra lookup, another label).
func invoiceRun(inv, rep, variant int) Run {
	r := Run{ID: "inv" + strconv.Itoa(inv) + "-" + strconv.Itoa(rep), InputKey: "INV-" + strconv.Itoa(1000+inv),
		Tokens: int64(1000 + 10*rep), LatencyMS: float64(100 + rep), Success: variant == 0}
	id := `{"invoice_id":"INV-` + strconv.Itoa(1000+inv) + `"}`
	r.Tools = []string{"fetch_invoice", "classify"}
	r.States = []string{"fetch", "classify"}
	r.Calls = []Call{{Tool: "fetch_invoice", Args: id}, {Tool: "classify", Args: `{"amount":` + strconv.Itoa(100*(inv+1)) + `}`}}
	r.Output = `{"label":"` + strconv.Itoa(inv) + `"}`
	if variant != 0 {
		r.Tools = append(r.Tools, "lookup_vendor")
		r.States = append(r.States, "lookup")
		r.Calls = append(r.Calls, Call{Tool: "lookup_vendor", Args: `{"vendor":` + strconv.Itoa(variant) + `}`})
		r.Output = `{"label":"review"}`
	}
	return r
}

// TestByInputFourInputsFiveRepeats: 4 invoices × 5 repeats. Inputs 0 and 1 are reproduced
// exactly, input 2 in 4 of 5 runs, input 3 splits 3 and 2. Within input groups
// RR = (20 + 20 + 12 + 6 + 2) / (4 · 20) = 0.75; pooled across inputs (what the cell gave
// before, comparing different invoices as if they were repeats) 60 / 380 ≈ 0.158.
func TestByInputFourInputsFiveRepeats(t *testing.T) {
	variant := map[[2]int]int{{2, 4}: 1, {3, 3}: 1, {3, 4}: 1}
	var runs []Run
	for inv := 0; inv < 4; inv++ {
		for rep := 0; rep < 5; rep++ {
			runs = append(runs, invoiceRun(inv, rep, variant[[2]int{inv, rep}]))
		}
	}
	m, err := ComputeCellByInput(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !m.RR.Value.Valid || m.RR.Value.V != 0.75 {
		t.Errorf("RR within input groups = %v, want 0.75", m.RR.Value)
	}
	across, err := ComputeCell(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 60.0 / 380; across.RR.Value.V != want {
		t.Errorf("RR across inputs = %v, want %v", across.RR.Value, want)
	}
	if want := (InputGroups{Groups: 4, GroupedRuns: 20}); m.InputGroups == nil || *m.InputGroups != want {
		t.Errorf("input groups = %+v, want %+v", m.InputGroups, want)
	}
	// Output agreement within groups is that of RR here (the variant changes the output);
	// across inputs no two invoices share a label.
	if m.OutputAgree.Value.V != 0.75 || across.OutputAgree.Value.V >= 0.2 {
		t.Errorf("output agreement within = %v, across = %v; want 0.75 and below 0.2", m.OutputAgree.Value, across.OutputAgree.Value)
	}
	// Per-run metrics are the cell's: every run counts.
	if m.N != 20 || m.Success.Successes != 17 || m.Tokens != across.Tokens {
		t.Errorf("N = %d, successes = %d, tokens %+v; want 20, 17 and the cell's %+v", m.N, m.Success.Successes, m.Tokens, across.Tokens)
	}
	checkAgainstPairs(t, "4×5", runs, m)
}

// TestByInputSingleRunsCountedNotScored: inputs seen once count in N and success but make no
// pair; with no input seen twice the pairwise metrics are null, never 1.
func TestByInputSingleRunsCountedNotScored(t *testing.T) {
	var runs []Run
	for inv := 0; inv < 6; inv++ {
		runs = append(runs, invoiceRun(inv, 0, 0))
	}
	noKey := invoiceRun(9, 0, 0)
	noKey.InputKey = ""
	runs = append(runs, noKey, noKey) // equal runs without a key are not known to share an input
	m, err := ComputeCellByInput(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.N != 8 || m.Success.Successes != 8 {
		t.Errorf("N = %d, successes %d, want 8 and 8", m.N, m.Success.Successes)
	}
	if want := (InputGroups{SingleRuns: 8}); *m.InputGroups != want {
		t.Errorf("input groups = %+v, want %+v", *m.InputGroups, want)
	}
	for name, e := range map[string]Estimate{"RR": m.RR, "DI": m.DI, "TSS": m.TSS, "AC": m.AC, "plan": m.PlanAgree} {
		if e.Value.Valid || e.SE.Valid {
			t.Errorf("%s = %+v with no input seen twice, want null", name, e)
		}
	}
	if m.Divergence != nil {
		t.Errorf("divergence = %v, want none", m.Divergence)
	}

	// One group of 3 among singles: scored on its 3 pairs, no SE (one group).
	runs = append(runs, invoiceRun(0, 1, 0), invoiceRun(0, 2, 1))
	m, err = ComputeCellByInput(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (InputGroups{Groups: 1, GroupedRuns: 3, SingleRuns: 7}); *m.InputGroups != want {
		t.Errorf("input groups = %+v, want %+v", *m.InputGroups, want)
	}
	if m.RR.Value.V != 1.0/3 || m.RR.SE.Valid {
		t.Errorf("RR = %+v, want 1/3 without an SE (one group)", m.RR)
	}
	checkAgainstPairs(t, "singles", runs, m)
}

// TestByInputMatchesPairs: on random cells of uneven groups, keyless runs and singles, every
// pooled metric equals the mean over the run pairs within groups computed pair by pair, and
// its SE the jackknife of that recomputation leaving one group out.
func TestByInputMatchesPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 7))
	for c := 0; c < 30; c++ {
		runs := simCell(10+r.IntN(40), r)
		inputs := 1 + r.IntN(8)
		for i := range runs {
			switch u := r.Float64(); {
			case u < 0.1:
				runs[i].InputKey = ""
			case u < 0.2:
				runs[i].InputKey = "single-" + strconv.Itoa(i)
			default:
				runs[i].InputKey = "in-" + strconv.Itoa(r.IntN(inputs))
			}
		}
		m, err := ComputeCellByInput(runs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstPairs(t, "cell "+strconv.Itoa(c), runs, m)
	}
}

// pairPool is the reference: the sums over ordered run pairs (i ≠ j) of the same non-empty
// input key, leaving out the runs of one key (drop) when drop is not "".
type pairPool struct {
	pairs, trace, tools, states, output, plan, tss float64
	acNum, acDen                                   float64
	div                                            []float64
}

func poolPairs(runs []Run, drop string, steps int) pairPool {
	var p pairPool
	p.div = make([]float64, steps)
	var lp leafParser
	for i := range runs {
		for j := range runs {
			a, b := runs[i], runs[j]
			if i == j || a.InputKey == "" || a.InputKey != b.InputKey || a.InputKey == drop {
				continue
			}
			p.pairs++
			eq := func(x, y []byte) float64 {
				if string(x) == string(y) {
					return 1
				}
				return 0
			}
			trace := func(r Run) []byte {
				return appendString(appendCalls(appendStrings(appendString(nil, r.Plan), r.States), r.Calls), r.Output)
			}
			p.trace += eq(trace(a), trace(b))
			p.tools += eq(appendStrings(nil, a.Tools), appendStrings(nil, b.Tools))
			p.states += eq(appendStrings(nil, a.States), appendStrings(nil, b.States))
			p.output += eq(appendString(nil, a.Output), appendString(nil, b.Output))
			p.plan += eq(appendString(nil, a.Plan), appendString(nil, b.Plan))
			p.tss += SequenceSimilarity(a.Tools, b.Tools)
			k := min(len(a.Calls), len(b.Calls))
			for s := 0; s < k; s++ {
				inter, union := jaccardCounts(lp.leafSet(a.Calls[s].Args, nil), lp.leafSet(b.Calls[s].Args, nil))
				if union == 0 {
					p.acNum++
				} else {
					p.acNum += float64(inter) / float64(union)
				}
			}
			p.acDen += float64(k)
			first := 0
			for first < steps {
				ha, hb := first < len(a.Calls), first < len(b.Calls)
				if ha != hb || (ha && a.Calls[first] != b.Calls[first]) {
					break
				}
				first++
			}
			for s := first; s < steps; s++ {
				p.div[s]++
			}
		}
	}
	return p
}

func (p pairPool) values() map[string]float64 {
	v := map[string]float64{}
	if p.pairs > 0 {
		v["RR"], v["plan"], v["TSS"] = p.trace/p.pairs, p.plan/p.pairs, p.tss/p.pairs
		v["DI"] = (p.tools/p.pairs + p.states/p.pairs + p.output/p.pairs) / 3
	}
	if p.acDen > 0 {
		v["AC"] = p.acNum / p.acDen
	}
	return v
}

func checkAgainstPairs(t *testing.T, name string, runs []Run, m CellMetrics) {
	t.Helper()
	steps, count := 0, map[string]int{}
	for _, r := range runs {
		if r.InputKey != "" {
			count[r.InputKey]++
		}
	}
	var keys []string
	for _, r := range runs {
		if count[r.InputKey] >= 2 {
			steps = max(steps, len(r.Calls))
			if !containsString(keys, r.InputKey) {
				keys = append(keys, r.InputKey)
			}
		}
	}
	all := poolPairs(runs, "", steps)
	want := all.values()
	got := map[string]Estimate{"RR": m.RR, "DI": m.DI, "TSS": m.TSS, "AC": m.AC, "plan": m.PlanAgree}
	for q, e := range got {
		w, ok := want[q]
		if ok != e.Value.Valid || (ok && math.Abs(e.Value.V-w) > 1e-12) {
			t.Errorf("%s: %s = %v, recomputed pair by pair %v (defined %v)", name, q, e.Value, w, ok)
			continue
		}
		// The jackknife over groups, recomputed by dropping each group's pairs.
		g := 0
		var loo []float64
		for _, k := range keys {
			if v, ok := poolPairs(runs, k, steps).values()[q]; ok {
				loo = append(loo, v)
			}
			g++
		}
		if !ok || len(loo) < 2 || len(loo) != g {
			if e.SE.Valid && len(loo) < 2 {
				t.Errorf("%s: %s SE = %v with %d groups, want null", name, q, e.SE, len(loo))
			}
			continue
		}
		var mean, ss float64
		for _, x := range loo {
			mean += x
		}
		mean /= float64(len(loo))
		for _, x := range loo {
			ss += (x - mean) * (x - mean)
		}
		se := math.Sqrt(float64(len(loo)-1) / float64(len(loo)) * ss)
		if !e.SE.Valid || math.Abs(e.SE.V-se) > 1e-12 {
			t.Errorf("%s: %s SE = %v, jackknife over groups recomputed %v", name, q, e.SE, se)
		}
	}
	if steps > 0 && all.pairs > 0 {
		if len(m.Divergence) != steps {
			t.Fatalf("%s: divergence has %d steps, want %d", name, len(m.Divergence), steps)
		}
		for s := range steps {
			if w := all.div[s] / all.pairs; math.Abs(m.Divergence[s].V-w) > 1e-12 {
				t.Errorf("%s: divergence[%d] = %v, recomputed %v", name, s, m.Divergence[s], w)
			}
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestCompareByInput: release B reproduces every invoice exactly, release A takes another path
// in 2 of the 5 runs of every invoice. The comparison values each release within input groups (the cells'
// values), its statistic is their difference, the stratified permutation test finds RR
// higher in B, and two releases with the same runs give p = 1. Success, tokens and latency are
// tested as Compare tests them.
func TestCompareByInput(t *testing.T) {
	var a, b []Run
	for inv := 0; inv < 4; inv++ {
		for rep := 0; rep < 5; rep++ {
			v := 0
			if rep%2 == 1 {
				v = 1 + rep
			}
			ra, rb := invoiceRun(inv, rep, v), invoiceRun(inv, rep, 0)
			ra.ID, rb.ID = "a-"+ra.ID, "b-"+rb.ID
			a, b = append(a, ra), append(b, rb)
		}
	}
	cfg := CompareConfig{Permutations: 2000, Seed: 3, CellA: "r1", CellB: "r2"}
	cs, err := CompareByInput(a, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ma, _ := ComputeCellByInput(a, Options{})
	mb, _ := ComputeCellByInput(b, Options{})
	plain, err := Compare(a, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	byQ := map[string]Comparison{}
	for _, c := range cs {
		byQ[c.Quantity+"/"+c.Test] = c
	}
	for q, want := range map[string][2]Value{QuantityRR: {ma.RR.Value, mb.RR.Value}, QuantityDI: {ma.DI.Value, mb.DI.Value},
		QuantityTSS: {ma.TSS.Value, mb.TSS.Value}, QuantityAC: {ma.AC.Value, mb.AC.Value}} {
		c := byQ[q+"/"+TestPermutation]
		if c.ValueA != want[0] || c.ValueB != want[1] || c.Method != MethodStratified {
			t.Errorf("%s: values %v, %v (%s), want the cells' within-group %v, %v", q, c.ValueA, c.ValueB, c.Method, want[0], want[1])
		}
		if !c.Statistic.Valid || math.Abs(c.Statistic.V-(want[1].V-want[0].V)) > 1e-12 {
			t.Errorf("%s: statistic %v, want %v", q, c.Statistic, want[1].V-want[0].V)
		}
	}
	if rr := byQ[QuantityRR+"/"+TestPermutation]; rr.ValueB.V != 1 || !rr.P.Valid || rr.P.V > 0.05 {
		t.Errorf("RR r1 → r2 = %v → %v, p %v; want 1 in r2 and p ≤ 0.05", rr.ValueA, rr.ValueB, rr.P)
	}
	for _, c := range plain {
		if c.Test == TestPermutation {
			continue
		}
		got := byQ[c.Quantity+"/"+c.Test]
		if got.P != c.P || got.Statistic != c.Statistic || got.ValueA != c.ValueA || got.ValueB != c.ValueB {
			t.Errorf("%s (%s) = %+v, want Compare's %+v", c.Quantity, c.Test, got, c)
		}
	}
	same, err := CompareByInput(a, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range same {
		if c.Test == TestPermutation && (!c.P.Valid || c.P.V != 1) {
			t.Errorf("%s of a release against itself: p %v, want 1", c.Quantity, c.P)
		}
	}
	// The same seed gives the same p.
	again, _ := CompareByInput(a, b, cfg)
	for i := range cs {
		if cs[i].P != again[i].P {
			t.Errorf("%s: p %v then %v with the same seed", cs[i].Quantity, cs[i].P, again[i].P)
		}
	}
}
