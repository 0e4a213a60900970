package metrics

import "math"

// Agreement returns A = Σ n_k(n_k−1) / (N(N−1)), the share of unordered
// pairs of distinct runs that share a value, where counts[k] = n_k runs have
// the k-th distinct value and N = Σ n_k. It is Null when N < 2 or a count
// is negative. O(len(counts)); exact (integer numerator and denominator).
func Agreement(counts []int64) Value {
	n, p, ok := agreementSums(counts)
	if !ok || n < 2 {
		return Null
	}
	return Some(float64(p) / (float64(n) * float64(n-1)))
}

// AgreementEstimate returns Agreement(counts) with its leave-one-run-out
// jackknife standard error, computed from the counts alone: leaving out one
// run of group k lowers the numerator by 2(n_k−1), so the n_k runs of a
// group share one leave-one-out value and the jackknife costs O(len(counts)).
func AgreementEstimate(counts []int64) Estimate {
	n, p, ok := agreementSums(counts)
	if !ok || n < 2 {
		return Estimate{}
	}
	e := Estimate{Value: Some(float64(p) / (float64(n) * float64(n-1)))}
	if n < 3 {
		return e
	}
	den := float64(n-1) * float64(n-2)
	loo := func(k int) float64 { return (float64(p) - 2*float64(counts[k]-1)) / den }
	var mean float64
	for k, c := range counts {
		mean += float64(c) * loo(k)
	}
	mean /= float64(n)
	var ss float64
	for k, c := range counts {
		d := loo(k) - mean
		ss += float64(c) * d * d
	}
	e.SE = Some(math.Sqrt(float64(n-1) / float64(n) * ss))
	return e
}

// agreementSums returns N and Σ n_k(n_k−1); ok is false on a negative count.
func agreementSums(counts []int64) (n, p int64, ok bool) {
	for _, c := range counts {
		if c < 0 {
			return 0, 0, false
		}
		n += c
		p += c * (c - 1)
	}
	return n, p, true
}

// AgreementOf counts the distinct values of sigs and returns their
// Agreement: the share of unordered pairs of runs with equal signatures.
func AgreementOf[T comparable](sigs []T) Value {
	return Agreement(countValues(sigs))
}

func countValues[T comparable](sigs []T) []int64 {
	idx := make(map[T]int, len(sigs))
	var counts []int64
	for _, s := range sigs {
		i, ok := idx[s]
		if !ok {
			i = len(counts)
			idx[s] = i
			counts = append(counts, 0)
		}
		counts[i]++
	}
	return counts
}
