package metrics

import (
	"math/rand/v2"
	"testing"
)

// The subset-counting form of AC must give bit-identical pair sums and
// equal row sums to the pair loop, on leaf sets of mixed sizes (empty
// ones, equal sets from different argument bytes, shared leaves).
func TestACSubsetsMatchesPairLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for it := 0; it < 200; it++ {
		d := 1 + r.IntN(40)
		universe := 1 + r.IntN(12)
		sets := make([][]uint64, d)
		counts := make([]int64, d)
		for a := range sets {
			counts[a] = 1 + int64(r.IntN(5))
			size := r.IntN(min(universe, 7) + 1)
			seen := map[uint64]bool{}
			for len(seen) < size {
				seen[uint64(r.IntN(universe))*0x9e3779b97f4a7c15] = true
			}
			for h := range seen {
				sets[a] = append(sets[a], h)
			}
			if it%2 == 0 { // leaves every argument shares
				sets[a] = append(sets[a], 1, 2)
			}
			sortU64(sets[a])
		}
		var f1, f2 fracSum
		r1 := make([]float64, d)
		r2 := make([]float64, d)
		var sc subsetScratch
		acSubsets(sets, counts, &f1, r1, &sc)
		acPairLoop(sets, counts, &f2, r2)
		if f1.value() != f2.value() {
			t.Fatalf("iteration %d: subset sum %v, pair loop %v (sets %v, counts %v)", it, f1.value(), f2.value(), sets, counts)
		}
		for a := range r1 {
			if !nearValue(Some(r1[a]), Some(r2[a]), 1e-12) {
				t.Fatalf("iteration %d: row %d: subsets %v, pair loop %v", it, a, r1[a], r2[a])
			}
		}
	}
}

func sortU64(s []uint64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
