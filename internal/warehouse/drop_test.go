package warehouse

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// nopAcker stands for a delivered message.
type nopAcker struct{}

func (nopAcker) Ack() error                    { return nil }
func (nopAcker) TermWithReason(_ string) error { return nil }

// ackedAfter returns the stream sequence that the committer acknowledges cumulatively after a
// batch of items delivered in order seqs at watermark wm (as commit partitions a batch: the
// run from wm+1 without a hole is stored), and whether it acknowledges one.
func ackedAfter(items []*item, wm uint64) (uint64, bool) {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b *item) int { return int(a.streamSeq) - int(b.streamSeq) })
	next := wm
	for _, it := range sorted {
		if it.streamSeq == next+1 {
			next++
		}
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if it := sorted[i]; it.streamSeq <= next && it.ack != nil {
			return it.streamSeq, true
		}
	}
	return 0, false
}

// dropMessages must keep the message the committer acknowledges, whatever the batch: holes,
// redeliveries at or below the watermark, the same message twice, any order, rejected ones.
func TestDropMessagesKeepsAcked(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 5000; trial++ {
		n := 1 + rng.IntN(12)
		items := make([]*item, n)
		for i := range items {
			items[i] = &item{streamSeq: 1 + uint64(rng.IntN(16)), ack: nopAcker{}}
			if rng.IntN(5) == 0 {
				items[i].rej = &rejection{class: classMalformed}
			}
		}
		wm := uint64(rng.IntN(10))
		wantSeq, wantOK := ackedAfter(items, wm)
		dropMessages(items)
		gotSeq, gotOK := ackedAfter(items, wm)
		if gotSeq != wantSeq || gotOK != wantOK {
			seqs := make([]uint64, n)
			for i, it := range items {
				seqs[i] = it.streamSeq
			}
			t.Fatalf("batch %v at watermark %d: acknowledges %d (%v) after dropMessages, want %d (%v)", seqs, wm, gotSeq, gotOK, wantSeq, wantOK)
		}
		for _, it := range items {
			if it.rej != nil && it.ack == nil {
				t.Fatalf("dropMessages let a rejected message go (stream sequence %d)", it.streamSeq)
			}
		}
		kept := 0
		for _, it := range items {
			if it.ack != nil {
				kept++
			}
		}
		if n > 1 && kept == n && !anyHoleOrRejected(items) {
			t.Fatalf("dropMessages kept all %d messages of a batch without a hole", n)
		}
	}
}

func anyHoleOrRejected(items []*item) bool {
	seqs := make([]uint64, 0, len(items))
	for _, it := range items {
		if it.rej != nil {
			return true
		}
		seqs = append(seqs, it.streamSeq)
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return true
		}
	}
	return false
}
