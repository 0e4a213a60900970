package warehouse

import (
	"slices"
	"testing"
)

// sortItems keeps the batch's order in each part, counts duplicates without storing them, and
// for a batch with nothing to drop gives the batch itself, capped so that appending to what it
// gave cannot overwrite the batch.
func TestSortItems(t *testing.T) {
	mk := func(n int) []*item {
		items := make([]*item, n)
		for i := range items {
			items[i] = &item{streamSeq: uint64(i + 1)}
		}
		return items
	}
	seqs := func(items []*item) []uint64 {
		var out []uint64
		for _, it := range items {
			out = append(out, it.streamSeq)
		}
		return out
	}

	all := slices.Grow(mk(5), 1) // room for one more, as a batch's array has
	good, rejected, dups := sortItems(all)
	if !slices.Equal(seqs(good), []uint64{1, 2, 3, 4, 5}) || rejected != nil || dups != 0 {
		t.Fatalf("all good: good %v, rejected %v, dups %d", seqs(good), seqs(rejected), dups)
	}
	if &good[0] != &all[0] {
		t.Errorf("all good: a copy of the batch, want the batch itself")
	}
	if cap(good) != len(all) {
		t.Errorf("all good: cap %d, want %d (capped)", cap(good), len(all))
	}
	_ = append(good, &item{streamSeq: 99})
	if spare := all[:len(all)+1][len(all)]; spare != nil {
		t.Errorf("appending to good wrote into the batch's array (%d)", spare.streamSeq)
	}

	mixed := mk(6)
	mixed[1].rej = &rejection{class: classMalformed}
	mixed[2].dup = true
	mixed[4].rej = &rejection{class: classInvalid}
	good, rejected, dups = sortItems(mixed)
	if !slices.Equal(seqs(good), []uint64{1, 4, 6}) || !slices.Equal(seqs(rejected), []uint64{2, 5}) || dups != 1 {
		t.Fatalf("mixed: good %v, rejected %v, dups %d; want [1 4 6], [2 5], 1", seqs(good), seqs(rejected), dups)
	}
	if seqs(mixed)[0] != 1 || len(mixed) != 6 || mixed[1].streamSeq != 2 {
		t.Errorf("mixed: the batch itself changed: %v", seqs(mixed))
	}
}
