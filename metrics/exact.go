package metrics

import (
	"fmt"
	"math"
)

// lchoose returns log C(n, k) for 0 ≤ k ≤ n.
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// FisherExact returns the two-sided p-value of Fisher's exact test for the
// 2×2 table [[a, b], [c, d]]: the sum of the hypergeometric probabilities
// of all tables with the same margins whose probability is at most the
// observed one × (1 + 1e-7). Probabilities are handled in log space.
func FisherExact(a, b, c, d int) (float64, error) {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return 0, fmt.Errorf("%w: FisherExact(%d, %d, %d, %d): negative count", ErrInvalidArgument, a, b, c, d)
	}
	r1, r2, c1 := a+b, c+d, a+c
	n := r1 + r2
	lo, hi := max(0, c1-r2), min(r1, c1)
	if lo == hi {
		return 1, nil
	}
	lnorm := lchoose(n, c1)
	lp := func(x int) float64 { return lchoose(r1, x) + lchoose(r2, c1-x) - lnorm }
	cut := lp(a) + math.Log1p(1e-7)
	lps := make([]float64, 0, hi-lo+1)
	lmax := math.Inf(-1)
	for x := lo; x <= hi; x++ {
		v := lp(x)
		if v <= cut {
			lps = append(lps, v)
			lmax = max(lmax, v)
		}
	}
	var s float64
	for _, v := range lps {
		s += math.Exp(v - lmax)
	}
	return min(1, math.Exp(lmax)*s), nil
}

// McNemarExact returns the exact two-sided McNemar p-value for b and c
// discordant pairs: min(1, 2·BinomCDF(min(b, c); b + c, ½)); 1 when there
// are no discordant pairs.
func McNemarExact(b, c int) (float64, error) {
	if b < 0 || c < 0 {
		return 0, fmt.Errorf("%w: McNemarExact(%d, %d): negative count", ErrInvalidArgument, b, c)
	}
	n := b + c
	if n == 0 {
		return 1, nil
	}
	k := min(b, c)
	ln2n := float64(n) * math.Ln2
	lmax := math.Inf(-1)
	ls := make([]float64, k+1)
	for i := 0; i <= k; i++ {
		ls[i] = lchoose(n, i) - ln2n
		lmax = max(lmax, ls[i])
	}
	var s float64
	for _, v := range ls {
		s += math.Exp(v - lmax)
	}
	return min(1, 2*math.Exp(lmax)*s), nil
}
