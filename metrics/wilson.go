package metrics

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// z975 is the 0.975 quantile of the standard normal (scipy's
// norm.isf(0.025)), used for 95% intervals so that they match the reference
// values to the last digits.
const z975 = 1.959963984540054

// Wilson returns the Wilson score interval for successes out of n at the
// given confidence level (0.95 for the reported 95% interval):
// (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n).
func Wilson(successes, n int, conf float64) (lo, hi float64, err error) {
	if n <= 0 || successes < 0 || successes > n {
		return 0, 0, fmt.Errorf("%w: Wilson(%d, %d): need 0 ≤ successes ≤ n, n > 0", ErrInvalidArgument, successes, n)
	}
	if !(conf > 0 && conf < 1) {
		return 0, 0, fmt.Errorf("%w: Wilson confidence %v not in (0, 1)", ErrInvalidArgument, conf)
	}
	z := z975
	if conf != 0.95 {
		z = distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	}
	nf := float64(n)
	p := float64(successes) / nf
	z2 := z * z
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	dist := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / denom
	return max(0, center-dist), min(1, center+dist), nil
}
