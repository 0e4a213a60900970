package warehouse

import "github.com/dittolab/ditto/events"

// attemptKey names one run attempt.
type attemptKey struct {
	study, run string
	attempt    int
}

// openAttempt is what the ingester holds of a run attempt that has not been folded yet.
type openAttempt struct {
	key   attemptKey
	items []histEvent // stored events of the attempt, in arrival order (not the messages: their bytes are freed)
	// partial: the entry's events were evicted, so its fold reads DuckDB. An entry that is
	// not partial may still miss events stored before it was created (before a restart); its
	// sequence numbers then have a hole (they are gapless per attempt) and complete says so.
	partial  bool
	finished bool // a run.finished of the attempt arrived in the current batch
	isNew    bool // the entry was created in the current batch
	touched  bool // the entry is in tracker.batch
}

// tracker holds the events of open run attempts so that the fold of an attempt usually needs
// no read from DuckDB. It is bounded: beyond maxEvents it drops the events of the oldest
// entries (their folds then read DuckDB), and beyond maxEntries it forgets event-less entries.
// It is owned by the committing goroutine.
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
		a = &openAttempt{key: k, isNew: true}
		t.open[k] = a
		t.fifo = append(t.fifo, k)
	}
	if !a.touched {
		a.touched = true
		t.batch = append(t.batch, a)
	}
	if !a.partial {
		a.items = append(a.items, histEvent{env: it.env, streamSeq: it.streamSeq})
		t.events++
	}
	if e.Type == events.TypeRunFinished {
		a.finished = true
	}
}

// endBatch clears the per-batch marks, removes folded entries and enforces the bounds.
func (t *tracker) endBatch(folded []attemptKey) {
	for _, k := range folded {
		if a := t.open[k]; a != nil {
			t.events -= len(a.items)
			delete(t.open, k)
		}
	}
	for _, a := range t.batch {
		a.isNew, a.finished, a.touched = false, false, false
	}
	// Clear before truncating: the backing array would otherwise keep the folded entries of
	// the largest batch so far, and their decoded events, reachable.
	clear(t.batch)
	t.batch = t.batch[:0]
	for t.events > t.maxEvents && len(t.fifo) > 0 {
		k := t.fifo[0]
		t.fifo = t.fifo[1:]
		if a := t.open[k]; a != nil && len(a.items) > 0 {
			t.events -= len(a.items)
			a.items, a.partial = nil, true
		}
	}
	if len(t.open) > t.maxEntries {
		for k, a := range t.open {
			if a.partial && len(a.items) == 0 {
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

// complete reports whether the entry holds the whole history of its attempt: not partial, and
// its sequence numbers are exactly 1..n.
func (a *openAttempt) complete() bool {
	if a.partial {
		return false
	}
	seen := make([]bool, len(a.items)+1)
	for _, h := range a.items {
		s := h.env.Seq
		if s < 1 || s > int64(len(a.items)) || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}
