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

// grouping partitions a cell's runs by one kind. Groups are numbered in
// order of first appearance, so everything derived from a grouping is a
// deterministic function of the run order.
type grouping struct {
	id    []int32 // group of each run
	count []int64 // runs per group
	rep   []int32 // first run of each group
}

func (g *grouping) distinct() int { return len(g.count) }

// index holds every grouping of one cell.
type index struct {
	n int
	g [numKinds]grouping
}

// buildIndex hashes each run once into framed sections and groups runs by
// every kind: O(total bytes) hashing plus N map operations per kind.
func buildIndex(runs []Run) *index {
	h := newHasher()
	ix := &index{n: len(runs)}
	var maps [numKinds]map[key128]int32
	for k := range maps {
		maps[k] = make(map[key128]int32)
		ix.g[k].id = make([]int32, len(runs))
	}
	var buf []byte
	var keys [numKinds]key128
	for i := range runs {
		r := &runs[i]
		// Sections are laid out so that the trace (plan, states, calls,
		// output) is one contiguous prefix.
		buf = appendString(buf[:0], r.Plan)
		p1 := len(buf)
		buf = appendStrings(buf, r.States)
		p2 := len(buf)
		buf = appendCalls(buf, r.Calls)
		p3 := len(buf)
		buf = appendString(buf, r.Output)
		p4 := len(buf)
		buf = appendStrings(buf, r.Tools)
		p5 := len(buf)
		buf = appendArgs(buf, r.Calls)
		keys[kTrace] = h.key(buf[:p4])
		keys[kPlan] = h.key(buf[:p1])
		keys[kStates] = h.key(buf[p1:p2])
		keys[kCalls] = h.key(buf[p2:p3])
		keys[kOutput] = h.key(buf[p3:p4])
		keys[kTools] = h.key(buf[p4:p5])
		keys[kArgs] = h.key(buf[p5:])
		for k := range keys {
			g := &ix.g[k]
			id, ok := maps[k][keys[k]]
			if !ok {
				id = int32(len(g.count))
				maps[k][keys[k]] = id
				g.count = append(g.count, 0)
				g.rep = append(g.rep, int32(i))
			}
			g.count[id]++
			g.id[i] = id
		}
	}
	return ix
}
