package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The hypergeometric sampler must follow the exact distribution on every
// branch: small draws counted one by one, inversion from the mode, and the
// reflections for more than half the items marked or sampled. A seeded
// chi-square goodness of fit over the exact probabilities (cells pooled to
// an expected count of 5 or more) must stay below its 0.999 quantile.
func TestHypergeometricDistribution(t *testing.T) {
	r := newRNG(3, 4)
	for _, tc := range []struct{ total, k, s int64 }{
		{10, 3, 4},             // counted one by one
		{50, 40, 10},           // more than half marked
		{60, 20, 45},           // more than half sampled
		{1000, 300, 200},       // inversion
		{1_000_000, 5000, 3e5}, // inversion, wide
		{2_000_000, 1_999_000, 1_000_000},
	} {
		const draws = 40_000
		lo, hi := max(0, tc.s-(tc.total-tc.k)), min(tc.k, tc.s)
		seen := map[int64]int{}
		for i := 0; i < draws; i++ {
			x := r.hypergeometric(tc.total, tc.k, tc.s)
			if x < lo || x > hi {
				t.Fatalf("%+v: draw %d outside [%d, %d]", tc, x, lo, hi)
			}
			seen[x]++
		}
		prob := func(x int64) float64 {
			return math.Exp(lchoose(int(tc.k), int(x)) + lchoose(int(tc.total-tc.k), int(tc.s-x)) - lchoose(int(tc.total), int(tc.s)))
		}
		var chi2, exp, obs float64
		cells := 0
		for x := lo; x <= hi; x++ {
			exp += draws * prob(x)
			obs += float64(seen[x])
			if exp >= 5 || x == hi {
				chi2 += (obs - exp) * (obs - exp) / max(exp, 1e-300)
				cells++
				exp, obs = 0, 0
			}
		}
		// The 0.999 quantile of χ² with ν degrees of freedom is below
		// ν + 4.5√(2ν) + 10 for every ν.
		nu := float64(cells - 1)
		if limit := nu + 4.5*math.Sqrt(2*nu) + 10; chi2 > limit {
			t.Errorf("%+v: χ² = %.1f over %d cells, above %.1f", tc, chi2, cells, limit)
		}
	}
}

// permPool is a pool of two simulated cells with its run-level engine.
func permPool(t *testing.T, na, nb int, seed uint64) (pooled, *index, *permEngine) {
	t.Helper()
	a := simCell(na, rand.New(rand.NewPCG(seed, 1)))
	b := simCell(nb, rand.New(rand.NewPCG(seed, 2)))
	pool := pooled{a: a, b: b}
	pix := buildPooledIndex(pool, allIDs, nil)
	runs := append(append([]Run(nil), a...), b...)
	return pool, pix, newPermEngine(runs, pix, CompareConfig{}.withDefaults())
}

// The statistics computed from class counts must equal, up to rounding,
// the run-level engine's on the same labellings: the counts carry all that
// RR, DI, TSS and AC depend on.
func TestCountStatsMatchRunLevel(t *testing.T) {
	pool, pix, e := permPool(t, 90, 70, 1)
	n, m := int64(pool.len()), int64(len(pool.a))
	rr := &pix.g[kTrace]
	rrClass, rrSize := classesOf(int(n), func(i int) int64 {
		if id := rr.id[i]; rr.count[id] >= 2 {
			return int64(id)
		}
		return -1
	})
	diClass, diSize, diStat := diClasses([3]*grouping{&pix.g[kTools], &pix.g[kStates], &pix.g[kOutput]}, m, n)
	tg, ag := &pix.g[kTools], &pix.g[kArgs]
	type statOf struct {
		class []int32
		size  []int64
		stat  countStat
	}
	stats := [numPermQ]statOf{
		qRR:  {rrClass, rrSize, agreementCountStat(rrSize, m, n)},
		qDI:  {diClass, diSize, diStat},
		qTSS: {tg.id, tg.count, pairCountStat(denseTSS(tg, internTools(pool, tg)), tg.count, m, n)},
		qAC:  {ag.id, ag.count, pairCountStat(denseAC(pool, ag), ag.count, m, n)},
	}
	perm := newPermuter(int(n), int(m), 9)
	inA := make([]bool, n)
	for rep := 0; rep < 50; rep++ {
		perm.next()
		sa, sb := e.stats(perm.idx[:m], perm.idx[m:])
		clear(inA)
		for _, i := range perm.idx[:m] {
			inA[i] = true
		}
		for q, s := range stats {
			x := make([]int64, len(s.size))
			for i, c := range s.class {
				if inA[i] && c >= 0 {
					x[c]++
				}
			}
			ca, cb := s.stat(x)
			if !nearValue(ca, sa[q], 1e-12) || !nearValue(cb, sb[q], 1e-12) {
				t.Fatalf("labelling %d, statistic %d: counts give (%v, %v), runs (%v, %v)", rep, q, ca, cb, sa[q], sb[q])
			}
		}
	}
}

// Drawing relabellings as counts is the same permutation test as
// permuting runs: on the same cells the p-values of the two methods agree
// within their Monte Carlo errors, and the observed statistic is the same.
func TestCompareByCountsMatchesRunLevel(t *testing.T) {
	a := simCell(300, rand.New(rand.NewPCG(5, 1)))
	b := simCell(300, rand.New(rand.NewPCG(5, 2)))
	// A small shift in cell B, so that p is neither 1 nor at its floor.
	for i := 0; i < len(b); i += 30 {
		b[i] = b[0]
	}
	const B = 4000
	runs, err := Compare(a, b, CompareConfig{Permutations: B, Seed: 2, PermRunLevelMax: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := Compare(a, b, CompareConfig{Permutations: B, Seed: 2, PermRunLevelMax: 100})
	if err != nil {
		t.Fatal(err)
	}
	gr, gc := byQuantityTest(runs), byQuantityTest(counts)
	moderate := 0
	for _, q := range []string{"rr", "di", "tss", "ac"} {
		r, c := gr[q+"/permutation"], gc[q+"/permutation"]
		if r.Method != "" || c.Method != MethodCounts {
			t.Errorf("%s: methods %q and %q, want run level and %q", q, r.Method, c.Method, MethodCounts)
			continue
		}
		if !nearValue(r.Statistic, c.Statistic, 1e-12) || !r.PSE.Valid || !c.PSE.Valid {
			t.Errorf("%s: statistics %v and %v, SEs %v and %v", q, r.Statistic, c.Statistic, r.PSE, c.PSE)
			continue
		}
		se := math.Hypot(r.PSE.V, c.PSE.V)
		if d := math.Abs(r.P.V - c.P.V); d > 4*se+1e-9 {
			t.Errorf("%s: p by runs %.4f, by counts %.4f: %.1f SEs apart", q, r.P.V, c.P.V, d/se)
		}
		t.Logf("%s: p by runs %.4f ± %.4f, by counts %.4f ± %.4f", q, r.P.V, r.PSE.V, c.P.V, c.PSE.V)
		if r.P.V > 0.01 && r.P.V < 0.99 {
			moderate++
		}
	}
	if moderate < 2 {
		t.Errorf("only %d of the p-values are moderate: the test compares too little", moderate)
	}
}

// The closed-form permutation SD of Δ (the normal approximation's scale)
// must match the SD of Δ* over run-level relabellings, for each way the
// pool's moments are computed: exactly from group sizes (RR, DI), over the
// distinct sequences (TSS), from AC's exact row sums with S₂ sampled, and
// wholly from sampled pairs.
func TestPermutationSDMatchesRelabellings(t *testing.T) {
	pool, pix, e := permPool(t, 400, 250, 3)
	n, m := pool.len(), len(pool.a)
	const reps = 6000
	perm := newPermuter(n, m, 11)
	var sum, sq [numPermQ]float64
	for rep := 0; rep < reps; rep++ {
		perm.next()
		sa, sb := e.stats(perm.idx[:m], perm.idx[m:])
		for q := range sa {
			d := sb[q].V - sa[q].V
			sum[q] += d
			sq[q] += d * d
		}
	}
	var empirical [numPermQ]float64
	for q := range empirical {
		mean := sum[q] / reps
		empirical[q] = math.Sqrt(sq[q]/reps - mean*mean)
	}
	parts := [3]*grouping{&pix.g[kTools], &pix.g[kStates], &pix.g[kOutput]}
	tg, ag := &pix.g[kTools], &pix.g[kArgs]
	seqs := internTools(pool, tg)
	sums, ok := acSums(pool, ag, -1)
	if !ok {
		t.Fatal("acSums refused an unlimited budget")
	}
	r := newRNG(1, 2)
	for _, tc := range []struct {
		name string
		q    int
		mo   permMoments
		tol  float64
	}{
		{"rr exact", qRR, agreementMoments(pix.g[kTrace].count), 0.05},
		{"di exact", qDI, diMoments(parts), 0.05},
		{"tss exact", qTSS, tssMoments(tg, seqs), 0.05},
		{"ac row sums", qAC, sumsMoments(ag, sums, poolSamplePairs, r, acPairGrouped(pool, ag)), 0.07},
		{"tss sampled", qTSS, sampledMoments(n, poolSamplePairs, r, tssPair(tg, seqs)), 0.1},
		{"ac sampled", qAC, sampledMoments(n, poolSamplePairs, r, acPairGrouped(pool, ag)), 0.1},
	} {
		got := tc.mo.sd(int64(m))
		if rel := math.Abs(got-empirical[tc.q]) / empirical[tc.q]; !(rel <= tc.tol) {
			t.Errorf("%s: closed-form SD %.5f, over %d relabellings %.5f (%.1f%% off)", tc.name, got, reps, empirical[tc.q], 100*rel)
		}
	}
}

// Past the class bound a test is asymptotic: its p must then agree with
// the permutation test's (drawn by counts, the same distribution) where
// the permutation distribution is close to normal, and say how it was
// obtained. A large pool with the class work forced down shows both.
func TestCompareAsymptoticAgreesWithPermutation(t *testing.T) {
	a := simCell(3000, rand.New(rand.NewPCG(8, 1)))
	b := simCell(3000, rand.New(rand.NewPCG(8, 2)))
	for i := 0; i < len(b); i += 12 {
		b[i] = b[1]
	}
	const B = 4000
	perm, err := Compare(a, b, CompareConfig{Permutations: B, Seed: 4, PermRunLevelMax: 100})
	if err != nil {
		t.Fatal(err)
	}
	// PermExactDistinct 1 sends TSS and AC to the asymptotic form.
	asym, err := Compare(a, b, CompareConfig{Permutations: B, Seed: 4, PermRunLevelMax: 100, PermExactDistinct: 1})
	if err != nil {
		t.Fatal(err)
	}
	gp, ga := byQuantityTest(perm), byQuantityTest(asym)
	for _, q := range []string{"tss", "ac"} {
		p, s := gp[q+"/permutation"], ga[q+"/permutation"]
		if p.Method != MethodCounts || s.Method != MethodAsymptotic || s.PSE.Valid {
			t.Errorf("%s: methods %q and %q (asymptotic SE %v), want %q and %q without an SE", q, p.Method, s.Method, s.PSE, MethodCounts, MethodAsymptotic)
			continue
		}
		if !nearValue(p.Statistic, s.Statistic, 1e-9) {
			t.Errorf("%s: statistics %v and %v", q, p.Statistic, s.Statistic)
		}
		// Agreement on the z scale: 0.25 is a tenth of the gap between
		// p = 0.5 and p = 0.01.
		zp, zs := zOf(p.P.V), zOf(s.P.V)
		t.Logf("%s: p by counts %.4f ± %.4f, asymptotic %.4f", q, p.P.V, p.PSE.V, s.P.V)
		if math.Abs(zp-zs) > 0.25+3*p.PSE.V/normalDensity(zp) {
			t.Errorf("%s: p by counts %.4f (z %.2f), asymptotic %.4f (z %.2f)", q, p.P.V, zp, s.P.V, zs)
		}
	}
}

// zOf is the two-sided normal quantile of p.
func zOf(p float64) float64 { return math.Sqrt2 * math.Erfcinv(p) }

func normalDensity(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// Compare derives both cells' groupings from the pool's; the cell values
// it reports must be ComputeCell's, bit for bit.
func TestCompareCellValuesAreComputeCells(t *testing.T) {
	for _, s := range []shape{shapeFew, shapeDistinct, shapeAdversarial} {
		a, b := genRuns(120, s, 1), genRuns(90, shapeFew, 2)
		cs, err := Compare(a, b, CompareConfig{Permutations: 10})
		if err != nil {
			t.Fatal(err)
		}
		ma, _ := ComputeCell(a, Options{})
		mb, _ := ComputeCell(b, Options{})
		want := map[string][2]Value{
			QuantityRR: {ma.RR.Value, mb.RR.Value}, QuantityDI: {ma.DI.Value, mb.DI.Value},
			QuantityTSS: {ma.TSS.Value, mb.TSS.Value}, QuantityAC: {ma.AC.Value, mb.AC.Value},
		}
		for _, c := range cs {
			if w, ok := want[c.Quantity]; ok && (!sameValue(c.ValueA, w[0]) || !sameValue(c.ValueB, w[1])) {
				t.Errorf("%v %s: Compare (%v, %v), ComputeCell (%v, %v)", s, c.Quantity, c.ValueA, c.ValueB, w[0], w[1])
			}
		}
	}
}
