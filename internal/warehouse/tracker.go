package warehouse

import "github.com/dittolab/ditto/events"

// attemptKey names one run attempt.
type attemptKey struct {
	study, run string
	attempt    int
}

// openAttempt is what the ingester holds of a run attempt that has not been folded yet: its
// history folded as far as it is gapless (fold), not its events. An event that arrives ahead of
// a hole in the sequence numbers waits in ahead until the hole fills.
type openAttempt struct {
	key  attemptKey
	fold foldState // the events with seq 1..next-1, folded in seq order
	next int64     // the seq the fold waits for
	// ahead holds the stored events past a hole (decoded, in arrival order; usually none).
	ahead []histEvent
	// partial: the entry's history cannot be folded from memory (its events were evicted, or
	// two of them have one seq), so its fold reads DuckDB. An entry that is not partial may
	// still miss events stored before it was created (before a restart); its sequence numbers
	// then have a hole (they are gapless per attempt), and complete says so.
	partial  bool
	finished bool // a run.finished of the attempt arrived in the current batch
	isNew    bool // the entry was created in the current batch
	touched  bool // the entry is in tracker.batch
}

// held is how many events the entry stands for (folded or waiting), for the tracker's bound.
func (a *openAttempt) held() int { return a.fold.n + len(a.ahead) }

// tracker holds the open run attempts' histories, folded as they arrive, so that the fold of
// an attempt usually needs no read from DuckDB. It is bounded: beyond maxEvents events it drops
// the state of the oldest entries (their folds then read DuckDB), and beyond maxEntries it
// forgets state-less entries. It is owned by the committing goroutine.
type tracker struct {
	maxEvents, maxEntries int
	open                  map[attemptKey]*openAttempt
	fifo                  []attemptKey // creation order, for eviction (may hold folded keys)
	events                int
	batch                 []*openAttempt // entries touched in the current batch
}

func newTracker(maxEvents int) *tracker {
	return &tracker{maxEvents: maxEvents, maxEntries: 4 * maxEvents, open: map[attemptKey]*openAttempt{}}
}

// reset forgets everything (after a failed commit: memory may hold events that were not stored).
func (t *tracker) reset() {
	*t = *newTracker(t.maxEvents)
}

// add records a stored event of a run attempt.
func (t *tracker) add(it *item) {
	e := &it.env
	if e.Run == events.StudyRun {
		return
	}
	k := attemptKey{e.Study, e.Run, e.Attempt}
	a := t.open[k]
	if a == nil {
		a = &openAttempt{key: k, next: 1, isNew: true}
		t.open[k] = a
		t.fifo = append(t.fifo, k)
	}
	if !a.touched {
		a.touched = true
		t.batch = append(t.batch, a)
	}
	if e.Type == events.TypeRunFinished {
		a.finished = true
	}
	if a.partial {
		return
	}
	before := a.held()
	a.push(histEvent{env: it.env, streamSeq: it.streamSeq})
	t.events += a.held() - before
}

// push folds h if it is the history's next event (then any waiting event it lets through),
// keeps it waiting if it is past a hole, and makes the entry partial if its seq is taken.
func (a *openAttempt) push(h histEvent) {
	switch s := h.env.Seq; {
	case s < a.next:
		a.drop() // a second event with a seq already folded
		return
	case s > a.next:
		for i := range a.ahead {
			if a.ahead[i].env.Seq == s {
				a.drop()
				return
			}
		}
		a.ahead = append(a.ahead, h)
		return
	}
	a.fold.add(&h.env)
	a.next++
	for len(a.ahead) > 0 {
		i := a.waiting(a.next)
		if i < 0 {
			return
		}
		a.fold.add(&a.ahead[i].env)
		a.next++
		last := len(a.ahead) - 1
		a.ahead[i] = a.ahead[last]
		a.ahead[last] = histEvent{}
		a.ahead = a.ahead[:last]
	}
	a.ahead = nil // let the backing array go
}

// waiting returns the index in ahead of the event with seq s, or -1.
func (a *openAttempt) waiting(s int64) int {
	for i := range a.ahead {
		if a.ahead[i].env.Seq == s {
			return i
		}
	}
	return -1
}

// drop makes the entry partial: its fold reads DuckDB.
func (a *openAttempt) drop() {
	a.partial, a.fold, a.ahead = true, foldState{}, nil
}

// endBatch clears the per-batch marks, removes folded entries and enforces the bounds.
func (t *tracker) endBatch(folded []attemptKey) {
	for _, k := range folded {
		if a := t.open[k]; a != nil {
			t.events -= a.held()
			delete(t.open, k)
		}
	}
	for _, a := range t.batch {
		a.isNew, a.finished, a.touched = false, false, false
	}
	// Clear before truncating: the backing array would otherwise keep the folded entries of
	// the largest batch so far, and their state, reachable.
	clear(t.batch)
	t.batch = t.batch[:0]
	for t.events > t.maxEvents && len(t.fifo) > 0 {
		k := t.fifo[0]
		t.fifo = t.fifo[1:]
		if a := t.open[k]; a != nil && !a.partial {
			t.events -= a.held()
			a.drop()
		}
	}
	if len(t.open) > t.maxEntries {
		for k, a := range t.open {
			if a.partial {
				delete(t.open, k)
			}
		}
	}
	if len(t.fifo) > 2*len(t.open)+1024 { // compact the queue of folded keys
		live := t.fifo[:0]
		for _, k := range t.fifo {
			if t.open[k] != nil {
				live = append(live, k)
			}
		}
		t.fifo = live
	}
}

// complete reports whether the entry's fold holds the whole history of its attempt: not
// partial, and no event waits behind a hole (the sequence numbers are exactly 1..n).
func (a *openAttempt) complete() bool {
	return !a.partial && len(a.ahead) == 0 && a.fold.n > 0
}
