package metrics

import (
	"fmt"
	"math"
	"slices"
)

// Mann–Whitney methods reported in MWResult.Method.
const (
	MethodExact      = "exact"
	MethodAsymptotic = "asymptotic"
)

// exactMaxSmaller is the documented bound: the exact null distribution is used
// when there are no ties and the smaller sample has at most 8 values.
const exactMaxSmaller = 8

// exactMaxCells bounds n1·n2 for the exact distribution (its table has
// n1·n2/2 entries): beyond 10⁸ (8 values against 12.5 million) the normal
// approximation is used and reported as such.
const exactMaxCells = 100_000_000

// MWResult is a two-sided Mann–Whitney U test of x against y.
type MWResult struct {
	// U1 is the U statistic of x: the number of (x, y) pairs with x > y,
	// ties counting ½.
	U1 float64 `json:"u1"`
	// P is the two-sided p-value.
	P float64 `json:"p"`
	// CliffsDelta is 2·U1/(n1·n2) − 1 ∈ [−1, 1]; positive when x tends to
	// exceed y.
	CliffsDelta float64 `json:"cliffs_delta"`
	// Method is MethodExact or MethodAsymptotic.
	Method string `json:"method"`
}

// MannWhitneyU runs the test choosing the method as docs/metrics.md says: the
// exact null distribution when there are no ties and n1 ≤ 8 or n2 ≤ 8,
// otherwise the normal approximation with tie and continuity correction.
// (One guard beyond that rule: exact needs n1·n2 ≤ 10⁸.)
func MannWhitneyU(x, y []float64) (MWResult, error) {
	return mannWhitneyUOwned(slices.Clone(x), slices.Clone(y))
}

// mannWhitneyUOwned is MannWhitneyU on samples it may reorder (rankOwned): a caller that built
// them for the test alone saves a copy of each (at 10^6 runs a cell, 16 MB a quantity).
func mannWhitneyUOwned(x, y []float64) (MWResult, error) {
	rk, err := rankOwned(x, y)
	if err != nil {
		return MWResult{}, err
	}
	if !rk.ties && min(len(x), len(y)) <= exactMaxSmaller && len(x)*len(y) <= exactMaxCells {
		return rk.exact(), nil
	}
	return rk.asymptotic(), nil
}

// MannWhitneyUAsymptotic always uses the normal approximation:
// z = (max(U1, U2) − n1n2/2 − ½)/σ with σ² = n1n2/12 · ((n+1) − Σ(t³−t)/(n(n−1))),
// p = 2·P(Z > z), clipped to [0, 1]. When every value is tied (σ = 0) the
// samples carry no evidence of a shift and p = 1.
func MannWhitneyUAsymptotic(x, y []float64) (MWResult, error) {
	rk, err := rankSamples(x, y)
	if err != nil {
		return MWResult{}, err
	}
	return rk.asymptotic(), nil
}

// MannWhitneyUExact uses the exact null distribution of U, valid only
// without ties (an error otherwise). p = min(1, 2·P(U ≤ min(U1, U2))). The
// distribution of U is the coefficient sequence of the Gaussian binomial
// [n1+n2 choose m]_q (m = min(n1, n2)), computed up to min(U1, U2) as
// partitions into parts ≤ m corrected by the 2^m terms of Π(1 − q^{n+i}):
// O(m² · max(n1, n2)) time, so it stays cheap for one small sample against
// a large one.
func MannWhitneyUExact(x, y []float64) (MWResult, error) {
	rk, err := rankSamples(x, y)
	if err != nil {
		return MWResult{}, err
	}
	if rk.ties {
		return MWResult{}, fmt.Errorf("%w: MannWhitneyUExact: samples have ties", ErrInvalidArgument)
	}
	if min(len(x), len(y)) > 24 {
		// 2^m subsets: beyond this the asymptotic form is the only sane one.
		return MWResult{}, fmt.Errorf("%w: MannWhitneyUExact: smaller sample has %d > 24 values", ErrInvalidArgument, min(len(x), len(y)))
	}
	return rk.exact(), nil
}

type ranked struct {
	n1, n2  int
	u1      float64
	tieTerm float64 // Σ (t³ − t) over tie groups
	ties    bool
}

func rankSamples(x, y []float64) (ranked, error) {
	return rankOwned(slices.Clone(x), slices.Clone(y))
}

// rankOwned is rankSamples that sorts x and y in place.
func rankOwned(x, y []float64) (ranked, error) {
	if len(x) == 0 || len(y) == 0 {
		return ranked{}, fmt.Errorf("%w: Mann–Whitney U needs two non-empty samples (got %d and %d)", ErrEmpty, len(x), len(y))
	}
	for _, v := range x {
		if math.IsNaN(v) {
			return ranked{}, fmt.Errorf("%w: Mann–Whitney U sample contains NaN", ErrInvalidArgument)
		}
	}
	for _, v := range y {
		if math.IsNaN(v) {
			return ranked{}, fmt.Errorf("%w: Mann–Whitney U sample contains NaN", ErrInvalidArgument)
		}
	}
	// Each sample sorted on its own, then merged group by group of equal
	// values: sorting plain floats is several times faster than sorting
	// tagged pairs with a comparison function (a million values a side).
	xs, ys := x, y
	slices.Sort(xs)
	slices.Sort(ys)
	rk := ranked{n1: len(x), n2: len(y)}
	var r1 float64
	i, j := 0, 0
	for i < len(xs) || j < len(ys) {
		var v float64
		if j == len(ys) || i < len(xs) && xs[i] <= ys[j] {
			v = xs[i]
		} else {
			v = ys[j]
		}
		ci, cj := 0, 0
		for i+ci < len(xs) && xs[i+ci] == v {
			ci++
		}
		for j+cj < len(ys) && ys[j+cj] == v {
			cj++
		}
		// The group holds ranks i+j+1 … i+j+t.
		start := i + j
		t := float64(ci + cj)
		avg := float64(start+start+ci+cj+1) / 2
		for k := 0; k < ci; k++ {
			r1 += avg
		}
		if ci+cj > 1 {
			rk.ties = true
			rk.tieTerm += t*t*t - t
		}
		i += ci
		j += cj
	}
	rk.u1 = r1 - float64(rk.n1)*float64(rk.n1+1)/2
	return rk, nil
}

func (rk ranked) cliffs() float64 {
	return 2*rk.u1/(float64(rk.n1)*float64(rk.n2)) - 1
}

func (rk ranked) asymptotic() MWResult {
	n1, n2 := float64(rk.n1), float64(rk.n2)
	n := n1 + n2
	res := MWResult{U1: rk.u1, CliffsDelta: rk.cliffs(), Method: MethodAsymptotic, P: 1}
	u := max(rk.u1, n1*n2-rk.u1)
	mu := n1 * n2 / 2
	v := n1 * n2 / 12 * ((n + 1) - rk.tieTerm/(n*(n-1)))
	if !(v > 0) {
		return res
	}
	z := (u - mu - 0.5) / math.Sqrt(v)
	res.P = min(1, max(0, math.Erfc(z/math.Sqrt2)))
	return res
}

func (rk ranked) exact() MWResult {
	res := MWResult{U1: rk.u1, CliffsDelta: rk.cliffs(), Method: MethodExact}
	m, n := min(rk.n1, rk.n2), max(rk.n1, rk.n2)
	u0 := int(math.Round(min(rk.u1, float64(m*n)-rk.u1)))
	// f[u] = partitions of u into parts ≤ m; then cumulate.
	f := make([]float64, u0+1)
	f[0] = 1
	for s := 1; s <= m; s++ {
		for u := s; u <= u0; u++ {
			f[u] += f[u-s]
		}
	}
	for u := 1; u <= u0; u++ {
		f[u] += f[u-1]
	}
	// Inclusion–exclusion over the subsets S of {1..m} of the numerator
	// Π(1 − q^{n+i}); only shifts ≤ u0 contribute.
	var cdf float64
	var walk func(i, shift, sign int)
	walk = func(i, shift, sign int) {
		if shift > u0 {
			return
		}
		if i > m {
			cdf += float64(sign) * f[u0-shift]
			return
		}
		walk(i+1, shift, sign)
		walk(i+1, shift+n+i, -sign)
	}
	walk(1, 0, 1)
	total := 1.0 // C(n+m, m)
	for i := 1; i <= m; i++ {
		total *= float64(n+i) / float64(i)
	}
	res.P = min(1, max(0, 2*cdf/total))
	return res
}
