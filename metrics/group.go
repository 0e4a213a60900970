package metrics

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

// buildIndex groups the runs by every kind, one kind at a time so that a
// single hash table is live: O(total bytes) hashing plus N table
// operations per kind.
func buildIndex(runs []Run, keepIDs [numKinds]bool) *index {
	h := newHasher()
	ix := &index{n: len(runs)}
	var t keyTable
	var buf []byte
	scratch := make([]int32, len(runs))
	for k := kind(0); k < numKinds; k++ {
		t.reset(len(runs))
		g := &ix.g[k]
		ids := scratch
		if keepIDs[k] {
			ids = make([]int32, len(runs))
			g.id = ids
		}
		for i := range runs {
			buf = frame(buf[:0], &runs[i], k)
			ids[i], _ = t.id(h.key(buf))
		}
		// Sized once the number of groups is known: appending as groups
		// appear spent more time copying than hashing.
		g.count = make([]int64, t.len())
		g.rep = make([]int32, t.len())
		for i := len(ids) - 1; i >= 0; i-- {
			g.count[ids[i]]++
			g.rep[ids[i]] = int32(i)
		}
	}
	return ix
}
