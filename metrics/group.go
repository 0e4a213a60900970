package metrics

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// kind names a run field (or combination) that runs are grouped by.
type kind int

const (
	kTrace kind = iota
	kPlan
	kTools
	kStates
	kOutput
	kCalls // (tool, args) sequence: divergence profile
	kArgs  // args sequence: Argument Consistency
	numKinds
)

// cellIDs marks the kinds whose per-run group ids ComputeCell uses (the DI
// jackknife and the TSS pair sample); the others keep only counts and
// representatives. permIDs adds those the permutation test needs.
var (
	cellIDs = [numKinds]bool{kTools: true, kStates: true, kOutput: true}
	permIDs = [numKinds]bool{kTrace: true, kTools: true, kStates: true, kOutput: true, kArgs: true}
)

// grouping partitions a cell's runs by one kind. Groups are numbered in
// order of first appearance, so everything derived from a grouping is a
// deterministic function of the run order.
type grouping struct {
	id    []int32 // group of each run (nil unless keepIDs)
	count []int64 // runs per group
	rep   []int32 // first run of each group
}

func (g *grouping) distinct() int { return len(g.count) }

// index holds every grouping of one cell.
type index struct {
	n int
	g [numKinds]grouping
}

// frame appends the framed bytes of one kind of run r.
func frame(b []byte, r *Run, k kind) []byte {
	switch k {
	case kTrace:
		b = appendString(b, r.Plan)
		b = appendStrings(b, r.States)
		b = appendCalls(b, r.Calls)
		return appendString(b, r.Output)
	case kPlan:
		return appendString(b, r.Plan)
	case kTools:
		return appendStrings(b, r.Tools)
	case kStates:
		return appendStrings(b, r.States)
	case kOutput:
		return appendString(b, r.Output)
	case kCalls:
		return appendCalls(b, r.Calls)
	default:
		return appendArgs(b, r.Calls)
	}
}

// buildIndex groups the runs by every kind, one kind at a time on each
// worker so that one hash table a worker is live (one in all below
// parallelMin runs): O(total bytes) hashing plus N table operations per
// kind.
func buildIndex(runs []Run, keepIDs [numKinds]bool) *index {
	return buildPooledIndex(pooled{a: runs}, keepIDs, nil)
}

// pooled is two cells' runs seen as one pool, cell a's first, without
// copying them: run i of the pool is a[i] for i < len(a), else b[i−len(a)].
type pooled struct{ a, b []Run }

func (p pooled) len() int { return len(p.a) + len(p.b) }

func (p pooled) at(i int) *Run {
	if i < len(p.a) {
		return &p.a[i]
	}
	return &p.b[i-len(p.a)]
}

// buildPooledIndex is buildIndex over a pool. A large pool is grouped on
// every core, each kind by one worker with its own table: the kinds are
// independent, and each is the same as grouped alone. A non-nil spare is
// the first worker's table, left sized for the pool for the caller to reuse.
func buildPooledIndex(runs pooled, keepIDs [numKinds]bool, spare *keyTable) *index {
	n := runs.len()
	ix := &index{n: n}
	workers := 1
	if n >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), int(numKinds))
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			h := newHasher()
			t := spare
			if w > 0 || t == nil {
				t = new(keyTable)
			}
			var buf []byte
			var scratch []int32
			for k := kind(next.Add(1) - 1); k < numKinds; k = kind(next.Add(1) - 1) {
				t.reset(n)
				g := &ix.g[k]
				var ids []int32
				if keepIDs[k] {
					ids = make([]int32, n)
					g.id = ids
				} else {
					if scratch == nil {
						scratch = make([]int32, n)
					}
					ids = scratch
				}
				i := 0
				for _, part := range [2][]Run{runs.a, runs.b} {
					for j := range part {
						buf = frame(buf[:0], &part[j], k)
						ids[i], _ = t.id(h.key(buf))
						i++
					}
				}
				// Sized once the number of groups is known: appending as
				// groups appear spent more time copying than hashing.
				g.count = make([]int64, t.len())
				g.rep = make([]int32, t.len())
				for i := len(ids) - 1; i >= 0; i-- {
					g.count[ids[i]]++
					g.rep[ids[i]] = int32(i)
				}
			}
		})
	}
	wg.Wait()
	return ix
}

// parallelMin: from this many runs on, grouping and the two cells of a
// comparison use every core (below, a goroutine and a second hash table
// cost more than they save).
const parallelMin = 50_000

// allIDs keeps the group of every run for every kind: a pool index from
// which both cells' indices are derived (subIndex).
var allIDs = [numKinds]bool{true, true, true, true, true, true, true}

// subIndex returns the index of the runs [lo, hi) of a pool indexed with
// allIDs, as buildIndex would have built it for those runs alone: groups
// renumbered in order of first appearance, so every result computed from it
// is the same, bit for bit. keepIDs says which kinds keep their ids.
func subIndex(pool *index, lo, hi int, keepIDs [numKinds]bool) *index {
	n := hi - lo
	ix := &index{n: n}
	var local, scratch []int32
	for k := kind(0); k < numKinds; k++ {
		pg, g := &pool.g[k], &ix.g[k]
		local = slices.Grow(local[:0], pg.distinct())[:pg.distinct()]
		for i := range local {
			local[i] = -1
		}
		var ids []int32
		if keepIDs[k] {
			ids = make([]int32, n)
		} else {
			if scratch == nil {
				scratch = make([]int32, n)
			}
			ids = scratch
		}
		var d int32
		for i := lo; i < hi; i++ {
			p := pg.id[i]
			if local[p] < 0 {
				local[p] = d
				d++
			}
			ids[i-lo] = local[p]
		}
		g.count = make([]int64, d)
		g.rep = make([]int32, d)
		for i := n - 1; i >= 0; i-- {
			g.count[ids[i]]++
			g.rep[ids[i]] = int32(i)
		}
		if keepIDs[k] {
			g.id = ids
		}
	}
	return ix
}
