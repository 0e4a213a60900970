package warehouse

import "sync"

// itemSlab holds the items of one batch: its messages as the gatherer copies them in, and the
// slice of pointers to them the batch hands on (batch.items). A slab is allocated once and used
// again by later batches (slabPool). Allocated per message, or per 256 of them, an event's 320
// bytes of item were a seventh of what the analyzer allocated an event: BenchmarkIngest's
// alloc-B/event went from 1,943 to about 1,690 with the slabs used again, and the collections of
// a pass from 22–24 to 18 (docs/benchmarks.md, seventeenth session).
type itemSlab struct {
	items []item  // len: the batch size
	ptrs  []*item // cap: the batch size; a batch's items slice is ptrs[:0] grown
}

// slabPool keeps the slab of a batch the committer is done with for the batch the gatherer
// opens next. At most three batches exist at once (ingester.session: the one being gathered,
// one waiting, the one being committed), and the fetcher opens a batch only once it has handed
// the last one over: when the committer gives a slab back, the next opened batch takes it, and
// a second kept slab would only add its 3.3 MB (10,240 items of 320 bytes) to the heap's peak.
type slabPool struct {
	mu   sync.Mutex
	free []*itemSlab
}

const keptSlabs = 1

// batch opens a batch of at most size messages on a slab from the pool, or a new one.
func (p *slabPool) batch(size int) *batch {
	p.mu.Lock()
	var s *itemSlab
	if n := len(p.free); n > 0 {
		s, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if s == nil || len(s.items) != size {
		s = &itemSlab{items: make([]item, size), ptrs: make([]*item, 0, size)}
	}
	return &batch{slab: s, items: s.ptrs[:0]}
}

// recycle gives b's slab back for a later batch. The caller is done with b and with every item
// of it: the committer has committed b (or given it up) and nothing it keeps points at b's
// items (a transaction keeps copies of its rejects, txn.keepRejected; the tracker copies the
// envelopes it folds). The slab's used items are cleared first, so that it keeps none of the
// messages' bodies, subjects or decoded payloads while it waits.
func (p *slabPool) recycle(b *batch) {
	s := b.slab
	if s == nil {
		return
	}
	n := len(b.items) // the gatherer only appends to a batch's items
	b.slab, b.items = nil, nil
	clear(s.items[:n])
	clear(s.ptrs[:n])
	p.mu.Lock()
	if len(p.free) < keptSlabs {
		p.free = append(p.free, s)
	}
	p.mu.Unlock()
}
