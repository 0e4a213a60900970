package metrics

import (
	"fmt"
	"slices"
)

// FDRLevel is the level at which a Benjamini–Hochberg adjusted p-value is
// called significant (the verdict is p̃ < FDRLevel).
const FDRLevel = 0.05

// BenjaminiHochberg returns the BH-adjusted p-values, in input order
// (p̃₍ᵢ₎ = min over j ≥ i of min(1, m·p₍ⱼ₎/j), p sorted ascending), and
// whether each is below FDRLevel. Every p must be in [0, 1].
func BenjaminiHochberg(p []float64) (adjusted []float64, reject []bool, err error) {
	m := len(p)
	order := make([]int, m)
	for i, v := range p {
		if !(v >= 0 && v <= 1) {
			return nil, nil, fmt.Errorf("%w: BenjaminiHochberg: p[%d] = %v not in [0, 1]", ErrInvalidArgument, i, v)
		}
		order[i] = i
	}
	// Stable, so equal p-values keep input order and results are deterministic.
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	adjusted = make([]float64, m)
	reject = make([]bool, m)
	running := 1.0
	for r := m - 1; r >= 0; r-- {
		i := order[r]
		running = min(running, float64(m)*p[i]/float64(r+1), 1)
		adjusted[i] = running
		reject[i] = running < FDRLevel
	}
	return adjusted, reject, nil
}
