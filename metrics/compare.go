package metrics

import (
	"fmt"
	"slices"
	"sync"
)

// Quantities compared between two cells.
const (
	QuantitySuccess = "success"
	QuantityRR      = "rr"
	QuantityDI      = "di"
	QuantityTSS     = "tss"
	QuantityAC      = "ac"
	QuantityTokens  = "tokens"
	QuantityLatency = "latency_ms"
)

// Tests named in Comparison.Test.
const (
	TestFisher       = "fisher_exact"
	TestMcNemar      = "mcnemar_exact"
	TestPermutation  = "permutation"
	TestMannWhitneyU = "mann_whitney_u"
)

// Defaults for CompareConfig.
const (
	DefaultPermExactDistinct = 256
	DefaultPermSamplePairs   = 500
	DefaultPermRunLevelMax   = 1000
)

// Methods of the permutation test named in Comparison.Method (the empty
// method is the permutation of runs with the statistic computed exactly).
const (
	// MethodSampled: runs are permuted and the statistic of each side is
	// estimated from sampled pairs.
	MethodSampled = "sampled"
	// MethodCounts: the relabellings are drawn as counts of distinct
	// signatures moved between the cells (the same permutation
	// distribution, at a cost independent of the number of runs).
	MethodCounts = "counts"
	// MethodStratified: the labels are shuffled within input groups, and the
	// statistic is the difference of the within-group metrics
	// (CompareByInput).
	MethodStratified = "stratified by input"
	// MethodAsymptotic (see also Mann–Whitney's) names the normal
	// approximation of the permutation distribution, with its exact
	// variance.
)

// CompareConfig configures Compare. The zero value gives the defaults.
type CompareConfig struct {
	// CellA and CellB label the two cells in every Comparison (e.g.
	// "study/task/model/baseline"); Compare does not interpret them.
	CellA, CellB string
	// Permutations is B of the permutation tests; 0 means
	// DefaultPermutations.
	Permutations int
	// Seed seeds the permutations (and any per-replicate pair sample), so
	// a report is reproducible.
	Seed uint64
	// Cell configures the ComputeCell calls that give both values.
	Cell Options
	// PermExactDistinct: the permutation statistic of TSS (AC) is exact
	// while the pooled cells have at most this many distinct tool
	// (argument) sequences (O(D²) per replicate); beyond, each replicate
	// and the observed statistic estimate it from PermSamplePairs sampled
	// pairs per side, which keeps the test valid at some loss of power.
	// 0 means DefaultPermExactDistinct.
	PermExactDistinct int
	// PermSamplePairs: 0 means DefaultPermSamplePairs.
	PermSamplePairs int
	// PermRunLevelMax: while the two cells hold at most this many runs
	// together, the permutation tests permute runs; beyond, each test
	// draws the counts of distinct signatures moved between the cells
	// when they are few enough, and otherwise uses the normal
	// approximation of the permutation distribution (docs/metrics.md,
	// "Large comparisons"). 0 means DefaultPermRunLevelMax.
	PermRunLevelMax int
}

// Validate reports fields out of range.
func (c CompareConfig) Validate() error {
	if c.Permutations < 0 || c.PermExactDistinct < 0 || c.PermSamplePairs < 0 || c.PermRunLevelMax < 0 {
		return fmt.Errorf("%w: CompareConfig: negative Permutations, PermExactDistinct, PermSamplePairs or PermRunLevelMax", ErrInvalidOptions)
	}
	return c.Cell.Validate()
}

func (c CompareConfig) withDefaults() CompareConfig {
	if c.Permutations == 0 {
		c.Permutations = DefaultPermutations
	}
	if c.PermExactDistinct == 0 {
		c.PermExactDistinct = DefaultPermExactDistinct
	}
	if c.PermSamplePairs == 0 {
		c.PermSamplePairs = DefaultPermSamplePairs
	}
	if c.PermRunLevelMax == 0 {
		c.PermRunLevelMax = DefaultPermRunLevelMax
	}
	c.Cell = c.Cell.withDefaults()
	return c
}

// Comparison is one test of one quantity between cell A (the reference,
// e.g. baseline) and cell B.
type Comparison struct {
	Quantity string `json:"quantity"`
	CellA    string `json:"cell_a"`
	CellB    string `json:"cell_b"`
	NA       int    `json:"n_a"`
	NB       int    `json:"n_b"`
	// ValueA and ValueB are the quantity in each cell: the success rate,
	// the metric, or the median tokens or latency.
	ValueA Value `json:"value_a"`
	ValueB Value `json:"value_b"`
	// Difference is ValueB − ValueA.
	Difference Value `json:"difference"`
	// Test is one of the Test* constants; Method refines it ("exact" or
	// "asymptotic" for Mann–Whitney; for a permutation test, "sampled"
	// when its statistic was estimated from sampled pairs, "counts" when
	// its relabellings were drawn as counts of distinct signatures,
	// "asymptotic" for the normal approximation of large cells).
	Test   string `json:"test"`
	Method string `json:"method,omitempty"`
	// Statistic is the test statistic: Fisher's sample odds ratio (a·d)/(b·c)
	// (null when b·c = 0), McNemar's b (pairs where A succeeded and B
	// failed), the permutation statistic Δ = B − A, or Mann–Whitney's U of A.
	Statistic Value `json:"statistic"`
	// EffectSize is Cliff's δ of B against A for Mann–Whitney, oriented like
	// Difference: positive when B tends to exceed A (δ(B, A) = −δ(A, B));
	// null for the other tests.
	EffectSize Value `json:"effect_size"`
	P          Value `json:"p"`
	// PSE is the Monte Carlo standard error of P when P is estimated from
	// random relabellings (a permutation test that does not use the normal
	// approximation); null for the other tests.
	PSE Value `json:"p_se"`
	// PAdjusted and Significant (PAdjusted < FDRLevel) are filled by
	// AdjustBH across a whole report.
	PAdjusted   Value `json:"p_adjusted"`
	Significant bool  `json:"significant"`
	// Note gives details (e.g. the discordant counts); Reason says why P is
	// null.
	Note   string `json:"note,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Compare produces the comparisons of cell b against cell a:
// success (Fisher's exact test; also the exact McNemar test when every run
// of both cells has a PairKey), RR, DI, TSS and AC (permutation tests over
// runs, sharing one seeded sequence of B permutations), tokens and latency
// (Mann–Whitney U with Cliff's δ). Comparisons that cannot be made (an
// empty side, an undefined metric) have a null P and a Reason. Errors
// report an invalid configuration or invalid runs only.
func Compare(a, b []Run, cfg CompareConfig) ([]Comparison, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, c := range [2]struct {
		label string
		runs  []Run
	}{{cfg.CellA, a}, {cfg.CellB, b}} {
		for i := range c.runs {
			if err := c.runs[i].validate(i); err != nil {
				return nil, fmt.Errorf("metrics: cell %q: %w", c.label, err)
			}
		}
	}
	// The runs are hashed once, as one pool: both cells' groupings are
	// read from the pool's, and so are the permutation tests'.
	pool := pooled{a: a, b: b}
	var pix *index
	// When every run has a pair key, the grouping's first table, sized for the pool, serves
	// again for McNemar's pairs: at 10^6 runs a cell, 62 MiB not allocated twice, but kept live
	// from the grouping to the test (the cells' metrics and Mann–Whitney tests in between).
	var table keyTable
	if pool.len() > 0 {
		spare := &table
		if !allPaired(a) || !allPaired(b) {
			spare = nil
		}
		pix = buildPooledIndex(pool, allIDs, spare)
	}
	cell := func(runs []Run, lo int) CellMetrics {
		var ix *index
		if len(runs) > 0 {
			ix = subIndex(pix, lo, lo+len(runs), cellIDs)
		}
		return cellFromIndex(runs, ix, cfg.Cell)
	}
	// The cells' metrics are independent: a large pair is computed on two
	// cores.
	var ma, mb CellMetrics
	both(pool.len() >= parallelMin,
		func() { ma = cell(a, 0) },
		func() { mb = cell(b, len(a)) })
	base := Comparison{CellA: cfg.CellA, CellB: cfg.CellB, NA: len(a), NB: len(b)}
	var tokens, latency Comparison
	both(pool.len() >= parallelMin,
		func() {
			tokens = compareMWU(QuantityTokens, a, b, ma.Tokens, mb.Tokens, func(r *Run) float64 { return float64(r.Tokens) }, base)
		},
		func() {
			latency = compareMWU(QuantityLatency, a, b, ma.Latency, mb.Latency, func(r *Run) float64 { return r.LatencyMS }, base)
		})
	var out []Comparison
	out = append(out, compareSuccess(a, b, ma, mb, base, &table)...)
	out = append(out, comparePermutation(pool, pix, ma, mb, base, cfg)...)
	out = append(out, tokens, latency)
	return out, nil
}

// both runs f and g, at the same time when parallel.
func both(parallel bool, f, g func()) {
	if !parallel {
		f()
		g()
		return
	}
	var wg sync.WaitGroup
	wg.Go(f)
	g()
	wg.Wait()
}

func withValues(c Comparison, q string, va, vb Value) Comparison {
	c.Quantity, c.ValueA, c.ValueB = q, va, vb
	if va.Valid && vb.Valid {
		c.Difference = Some(vb.V - va.V)
	}
	return c
}

const reasonEmpty = "a cell has no runs"

// compareSuccess tests the cells' success rates; t is a table it may reuse.
func compareSuccess(a, b []Run, ma, mb CellMetrics, base Comparison, t *keyTable) []Comparison {
	c := withValues(base, QuantitySuccess, ma.Success.Rate, mb.Success.Rate)
	c.Test = TestFisher
	sa, sb := ma.Success.Successes, mb.Success.Successes
	fa, fb := len(a)-sa, len(b)-sb
	if len(a) == 0 || len(b) == 0 {
		c.Reason = reasonEmpty
	} else {
		p, err := FisherExact(sa, fa, sb, fb)
		if err == nil {
			c.P = Some(p)
			c.Statistic = Some(float64(sa) * float64(fb) / (float64(fa) * float64(sb)))
			c.Note = fmt.Sprintf("table [[%d, %d], [%d, %d]] (rows A, B; columns success, failure)", sa, fa, sb, fb)
		} else {
			c.Reason = err.Error()
		}
	}
	out := []Comparison{c}
	if !allPaired(a) || !allPaired(b) {
		return out
	}
	m := withValues(base, QuantitySuccess, ma.Success.Rate, mb.Success.Rate)
	m.Test = TestMcNemar
	// Pair keys are matched through the package's hash table (ids in order of first
	// appearance, cell A's keys first): a Go map of a million strings per cell cost a second.
	h := newHasher()
	t.reset(len(a) + len(b))
	var buf []byte
	keyOf := func(r *Run) key128 {
		buf = append(buf[:0], r.PairKey...)
		return h.key(buf)
	}
	successA := make([]bool, len(a))
	for i := range a {
		id, inserted := t.id(keyOf(&a[i]))
		if !inserted {
			m.Reason = fmt.Sprintf("pair key %q repeats in cell A", a[i].PairKey)
			return append(out, m)
		}
		successA[id] = a[i].Success
	}
	seenB := make([]bool, len(a)+len(b))
	var pairs, bc, cb int
	for i := range b {
		id, _ := t.id(keyOf(&b[i]))
		if seenB[id] {
			m.Reason = fmt.Sprintf("pair key %q repeats in cell B", b[i].PairKey)
			return append(out, m)
		}
		seenB[id] = true
		if int(id) >= len(a) {
			continue // no run of cell A has this key
		}
		pairs++
		switch sa := successA[id]; {
		case sa && !b[i].Success:
			bc++
		case !sa && b[i].Success:
			cb++
		}
	}
	if pairs == 0 {
		m.Reason = "no run of cell B shares a pair key with cell A"
		return append(out, m)
	}
	p, err := McNemarExact(bc, cb)
	if err != nil {
		m.Reason = err.Error()
		return append(out, m)
	}
	m.P, m.Statistic = Some(p), Some(float64(bc))
	m.Note = fmt.Sprintf("%d pairs; b = %d (A succeeded, B failed), c = %d (A failed, B succeeded)", pairs, bc, cb)
	return append(out, m)
}

func allPaired(runs []Run) bool {
	if len(runs) == 0 {
		return false
	}
	for i := range runs {
		if runs[i].PairKey == "" {
			return false
		}
	}
	return true
}

func comparePermutation(pool pooled, pix *index, ma, mb CellMetrics, base Comparison, cfg CompareConfig) []Comparison {
	out := permComparisons(ma, mb, base)
	if len(pool.a) == 0 || len(pool.b) == 0 {
		return emptyCell(out)
	}
	if pool.len() > cfg.PermRunLevelMax {
		permuteCounts(pool, pix, ma, mb, out, cfg)
		return out
	}
	runs := make([]Run, 0, pool.len())
	runs = append(append(runs, pool.a...), pool.b...)
	e := newPermEngine(runs, pix, cfg)
	if e.tss.sampled {
		out[qTSS].Method = MethodSampled
	}
	if e.ac.sampled {
		out[qAC].Method = MethodSampled
	}
	na := len(pool.a)
	ident := make([]int32, len(runs))
	for i := range ident {
		ident[i] = int32(i)
	}
	sa, sb := e.stats(ident[:na], ident[na:])
	var t permTally
	for q := range out {
		switch {
		case !sa[q].Valid || !sb[q].Valid:
			out[q].Reason = undefinedReason(out[q].Quantity)
		default:
			t.obs[q], t.live[q] = sb[q].V-sa[q].V, true
			out[q].Statistic = Some(t.obs[q])
		}
	}
	if !slices.Contains(t.live[:], true) {
		return out
	}
	perm := newPermuter(len(runs), na, cfg.Seed)
	for rep := 0; rep < cfg.Permutations; rep++ {
		perm.next()
		t.add(e.stats(perm.idx[:na], perm.idx[na:]))
	}
	t.finish(out, func(valid int) string {
		return fmt.Sprintf("B = %d permutations (%d with the statistic defined), seed %d", cfg.Permutations, valid, cfg.Seed)
	})
	return out
}

// permComparisons are the comparisons of RR, DI, TSS and AC between cells with metrics ma and
// mb by a permutation test, in the order of the statistics vector, before the test.
func permComparisons(ma, mb CellMetrics, base Comparison) []Comparison {
	qs := [numPermQ]string{QuantityRR, QuantityDI, QuantityTSS, QuantityAC}
	va := [numPermQ]Value{ma.RR.Value, ma.DI.Value, ma.TSS.Value, ma.AC.Value}
	vb := [numPermQ]Value{mb.RR.Value, mb.DI.Value, mb.TSS.Value, mb.AC.Value}
	out := make([]Comparison, numPermQ)
	for q := range out {
		out[q] = withValues(base, qs[q], va[q], vb[q])
		out[q].Test = TestPermutation
	}
	return out
}

// emptyCell gives every comparison of out the reason that a cell has no runs.
func emptyCell(out []Comparison) []Comparison {
	for q := range out {
		out[q].Reason = reasonEmpty
	}
	return out
}

func undefinedReason(q string) string {
	return fmt.Sprintf("%s is undefined in a cell (fewer than 2 runs, or no aligned calls)", q)
}

func compareMWU(q string, a, b []Run, sa, sb Summary, f func(*Run) float64, base Comparison) Comparison {
	c := withValues(base, q, sa.Median, sb.Median)
	c.Test = TestMannWhitneyU
	if len(a) == 0 || len(b) == 0 {
		c.Reason = reasonEmpty
		return c
	}
	x := make([]float64, len(a))
	for i := range a {
		x[i] = f(&a[i])
	}
	y := make([]float64, len(b))
	for i := range b {
		y[i] = f(&b[i])
	}
	res, err := mannWhitneyUOwned(x, y)
	if err != nil {
		c.Reason = err.Error()
		return c
	}
	// res is the test of A's sample against B's, so its δ has the sign of
	// A − B; a comparison reads B against A.
	c.Method, c.Statistic, c.P, c.EffectSize = res.Method, Some(res.U1), Some(res.P), Some(-res.CliffsDelta)
	return c
}

// AdjustBH fills PAdjusted and Significant of every comparison with a
// defined P, adjusting across all of them (Benjamini–Hochberg); the others
// keep a null PAdjusted and Significant = false. Call it once per report,
// over every comparison of the report.
func AdjustBH(cs []Comparison) {
	var ps []float64
	var at []int
	for i := range cs {
		cs[i].PAdjusted, cs[i].Significant = Null, false
		if cs[i].P.Valid {
			ps = append(ps, cs[i].P.V)
			at = append(at, i)
		}
	}
	adj, rej, err := BenjaminiHochberg(ps)
	if err != nil {
		return // unreachable: every P this package produces is in [0, 1]
	}
	for k, i := range at {
		cs[i].PAdjusted, cs[i].Significant = Some(adj[k]), rej[k]
	}
}
