package metrics

import "math"

// hypergeometric returns the number of marked items in a uniform random
// sample of s items drawn without replacement from total items, k of them
// marked (0 ≤ k, s ≤ total). It is exact: small draws count marked items
// one at a time with integer draws; larger ones invert the distribution
// from its mode, walking outwards with the ratio of successive
// probabilities (O(standard deviation) steps, the mode's probability from
// log-gamma).
func (r rng) hypergeometric(total, k, s int64) int64 {
	switch {
	case s == 0 || k == 0:
		return 0
	case s == total:
		return k
	case k == total:
		return s
	case 2*k > total: // count the unmarked items instead
		return s - r.hypergeometric(total, total-k, s)
	case 2*s > total: // count the marked items left out of the sample
		return k - r.hypergeometric(total, k, total-s)
	}
	// The distribution is symmetric in k and s.
	k, s = min(k, s), max(k, s)
	if k <= hyperSmall {
		// Marked item i is in the sample with probability
		// (places left)/(items left).
		var x int64
		for i := int64(0); i < k; i++ {
			if int64(r.below(uint64(total-i))) < s-x {
				x++
			}
		}
		return x
	}
	return r.hyperInvert(total, k, s)
}

// hyperSmall: below this many marked items, counting them one by one is
// cheaper than inverting the distribution.
const hyperSmall = 24

// hyperInvert inverts the distribution from its mode outwards.
func (r rng) hyperInvert(total, k, s int64) int64 {
	lo, hi := max(0, s-(total-k)), min(k, s)
	mode := min(hi, max(lo, (k+1)*(s+1)/(total+2)))
	pm := math.Exp(lchoose(int(k), int(mode)) + lchoose(int(total-k), int(s-mode)) - lchoose(int(total), int(s)))
	// up(x) = P(x+1)/P(x).
	up := func(x int64) float64 {
		return float64(k-x) * float64(s-x) / (float64(x+1) * float64(total-k-s+x+1))
	}
	u := r.uniform() - pm
	if u < 0 {
		return mode
	}
	xu, pu, xd, pd := mode, pm, mode, pm
	for xu < hi || xd > lo {
		if xu < hi {
			pu *= up(xu)
			xu++
			if u -= pu; u < 0 {
				return xu
			}
		}
		if xd > lo {
			pd /= up(xd - 1)
			xd--
			if u -= pd; u < 0 {
				return xd
			}
		}
	}
	return mode // rounding left u just above the total probability
}

// uniform returns a uniform float64 in [0, 1) with 53 random bits.
func (r rng) uniform() float64 {
	return float64(r.p.Uint64()>>11) / (1 << 53)
}
