package metrics

import (
	"slices"
	"testing"
)

// The partitioned grouping numbers groups exactly as one table inserting the keys in order
// does: the same id for every key, the same sizes and first indices, whatever the mix of
// repeated and distinct keys, and again when its memory is reused.
func TestGrouperMatchesOneTable(t *testing.T) {
	r := newRNG(7, 0)
	var g grouper
	for _, tc := range []struct {
		n, distinct int
	}{
		{1000, 10}, {radixMin + 1, 3}, {radixMin * 3, 1 << 30}, {radixMin * 5, 50_000}, {radixMin * 2, 1},
	} {
		pool := make([]key128, min(tc.distinct, tc.n))
		for i := range pool {
			pool[i] = key128{r.p.Uint64(), r.p.Uint64()}
		}
		keys := make([]key128, tc.n)
		for i := range keys {
			keys[i] = pool[r.below(uint64(len(pool)))]
		}
		var t1 keyTable
		t1.reset(tc.n)
		want := make([]int32, tc.n)
		for i, k := range keys {
			want[i], _ = t1.id(k)
		}
		wantCount, wantRep := make([]int64, t1.len()), make([]int32, t1.len())
		for i := tc.n - 1; i >= 0; i-- {
			wantCount[want[i]]++
			wantRep[want[i]] = int32(i)
		}
		ids := make([]int32, tc.n)
		count, rep := g.group(keys, ids)
		if !slices.Equal(ids, want) || !slices.Equal(count, wantCount) || !slices.Equal(rep, wantRep) {
			t.Errorf("n=%d, %d distinct: the grouping differs from one table's (%d groups, want %d)", tc.n, len(pool), len(count), len(wantCount))
		}
	}
}
