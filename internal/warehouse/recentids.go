package warehouse

import "hash/maphash"

// recentWindow is how many stored ids each of recentIDs' two generations holds before they
// rotate: the window answers for at least the last recentWindow ids stored (three seconds at
// 20,000 events a second) and at most twice that, in two maps of 64-bit hashes that together
// take a few MB and are reused (prev may hold up to twice recentWindow; beyond that the window
// is dropped and started again). An out-of-order event usually lands milliseconds behind the
// largest stored id (the load generator's run stamps its fifteen events
// up to 75 ms ahead of their publishing); one further behind is looked up in DuckDB as before.
const recentWindow = 1 << 16

// recentIDs tells, without a query, that an event id below the largest stored one is not
// stored, for the ids stored recently: existingIDs then leaves it out of the lookup in DuckDB.
// A lookup joined the batch's candidates with the stored ids (ingest_existing_ids), and each
// join left its hash table's block handles in DuckDB's buffer manager until the eviction queue
// holding them passed 32,768 entries (deploy/README.md, "A join a batch"); batches of events
// that arrive slightly out of order, as the load generator's and production's do, each paid
// one.
//
// The invariant: cur holds the hash of every stored id at or above curLo, and prev the hash of
// every stored id in [prevLo, curLo). An id at or above prevLo whose hash is in neither is not
// stored. A hash that is there says only "perhaps" (two ids can share a hash): existingIDs
// looks those up in DuckDB, so the maps never make a stored event look new.
// The window starts at the first lookup (a batch with ids below the largest stored one, which a
// stream in order never has: it never pays the window's memory) as the single stored id at or
// above the largest, and is dropped when a transaction fails (ingester.forget): the ids the
// ingester added for rows that were rolled back are then forgotten too.
type recentIDs struct {
	known         bool
	seed          maphash.Seed
	curLo, prevLo string
	cur, prev     map[uint64]struct{}
}

// start opens the window at maxID, the largest stored id ("" when none is stored: every id
// is then at or above the floor, and none is stored).
func (r *recentIDs) start(maxID string) {
	if r.cur == nil {
		r.seed = maphash.MakeSeed()
		r.cur, r.prev = make(map[uint64]struct{}, recentWindow), make(map[uint64]struct{}, recentWindow)
	}
	clear(r.cur)
	clear(r.prev)
	r.curLo, r.prevLo, r.known = maxID, maxID, true
	if maxID != "" {
		r.cur[r.hash(maxID)] = struct{}{}
	}
}

// reset forgets the window until the next start.
func (r *recentIDs) reset() { r.known = false }

func (r *recentIDs) hash(id string) uint64 { return maphash.String(r.seed, id) }

// gen returns the generation that answers for id, or nil when id is outside the window.
func (r *recentIDs) gen(id string) map[uint64]struct{} {
	switch {
	case !r.known || id < r.prevLo:
		return nil
	case id >= r.curLo:
		return r.cur
	default:
		return r.prev
	}
}

// notStored reports whether id is known not to be stored: it is in the window and its hash is
// not. False means "perhaps stored" (look it up).
func (r *recentIDs) notStored(id string) bool {
	g := r.gen(id)
	if g == nil {
		return false
	}
	_, ok := g[r.hash(id)]
	return !ok
}

// stored takes in id, just stored (in the open transaction), with maxID the largest stored id
// now. Once cur holds recentWindow ids the window moves on: cur becomes prev, covering
// [curLo, maxID), and the new cur starts at maxID, the only stored id at or above it; the ids
// below the old curLo leave the window.
func (r *recentIDs) stored(id, maxID string) {
	g := r.gen(id)
	if g == nil {
		return
	}
	g[r.hash(id)] = struct{}{}
	if len(r.prev) >= 2*recentWindow {
		// prev fills only with ids below curLo, and moves on only when cur fills: after one id
		// far ahead of the others (a clock ahead, an id that sorts high) cur would stay nearly
		// empty and prev take every id. Drop the window; the next lookup starts it again.
		r.known = false
		return
	}
	if len(r.cur) >= recentWindow && maxID >= r.curLo {
		r.cur, r.prev = r.prev, r.cur
		clear(r.cur)
		r.prevLo, r.curLo = r.curLo, maxID
		r.cur[r.hash(maxID)] = struct{}{}
	}
}
