package metrics

import (
	"math/rand/v2"
	"testing"
)

// The bit-parallel distance must equal the dynamic programme on random
// sequences of every length up to 64 (and the DP handles longer ones).
func TestMyersMatchesDP(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	peq := make([]uint64, 8)
	var scratch []int
	for it := 0; it < 20000; it++ {
		a := make([]int32, 1+r.IntN(64))
		b := make([]int32, r.IntN(70))
		alpha := 1 + r.IntN(8)
		for i := range a {
			a[i] = int32(r.IntN(alpha))
		}
		for i := range b {
			b[i] = int32(r.IntN(alpha))
		}
		for i, c := range a {
			peq[c] |= 1 << i
		}
		got := myers(peq, len(a), b)
		clear(peq)
		if want := levenshtein(a, b, &scratch); got != want {
			t.Fatalf("myers(%v, %v) = %d, DP %d", a, b, got, want)
		}
	}
}
