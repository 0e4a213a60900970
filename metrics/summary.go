package metrics

import (
	"math"
	"slices"
)

// Summary describes a sample of a numeric run field.
//
// Quantiles use the linear-interpolation definition (Hyndman and Fan type
// 7; NumPy's default "linear", R's default type 7, DuckDB's quantile_cont):
// with the sample sorted as x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎ and h = (n−1)p, Q(p) =
// x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎). Median = Q(0.5), IQR = Q(0.75) −
// Q(0.25), P95 = Q(0.95). SD is the sample standard deviation (n − 1
// denominator), null for n < 2; every field is null for n = 0.
type Summary struct {
	N      int   `json:"n"`
	Mean   Value `json:"mean"`
	SD     Value `json:"sd"`
	Min    Value `json:"min"`
	Q1     Value `json:"q1"`
	Median Value `json:"median"`
	Q3     Value `json:"q3"`
	IQR    Value `json:"iqr"`
	P95    Value `json:"p95"`
	Max    Value `json:"max"`
}

// Summarize returns the Summary of xs. It does not modify xs. NaN or
// infinite values make every field null except N.
func Summarize(xs []float64) Summary {
	return summarizeOwned(slices.Clone(xs))
}

// summarizeOwned is Summarize on a sample it may reorder: it sorts xs in place.
func summarizeOwned(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	sorted := xs
	for _, x := range sorted {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return s
		}
	}
	slices.Sort(sorted)
	// Two-pass mean and variance for accuracy; the second pass also keeps
	// zero-variance samples at exactly 0.
	var sum float64
	for _, x := range sorted {
		sum += x
	}
	mean := sum / float64(len(sorted))
	s.Mean = Some(mean)
	if len(sorted) > 1 {
		var ss float64
		for _, x := range sorted {
			d := x - mean
			ss += d * d
		}
		s.SD = Some(math.Sqrt(ss / float64(len(sorted)-1)))
	}
	s.Min = Some(sorted[0])
	s.Max = Some(sorted[len(sorted)-1])
	s.Q1 = Some(quantileSorted(sorted, 0.25))
	s.Median = Some(quantileSorted(sorted, 0.5))
	s.Q3 = Some(quantileSorted(sorted, 0.75))
	s.IQR = Some(s.Q3.V - s.Q1.V)
	s.P95 = Some(quantileSorted(sorted, 0.95))
	return s
}

// Quantile returns the type-7 quantile of xs at p ∈ [0, 1] (see Summary);
// Null for an empty sample, p outside [0, 1], or NaN values.
func Quantile(xs []float64, p float64) Value {
	if len(xs) == 0 || !(p >= 0 && p <= 1) {
		return Null
	}
	sorted := slices.Clone(xs)
	for _, x := range sorted {
		if math.IsNaN(x) {
			return Null
		}
	}
	slices.Sort(sorted)
	return Some(quantileSorted(sorted, p))
}

func quantileSorted(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := math.Floor(h)
	i := int(lo)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	a, b := sorted[i], sorted[i+1]
	if a == b {
		return a
	}
	return a + (h-lo)*(b-a)
}
