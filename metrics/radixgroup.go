package metrics

import "math/bits"

// grouper numbers keys by group in order of first appearance, reusing its memory from one
// call to the next. Up to radixMin keys it inserts them into one key table. Beyond, the table
// would outgrow the caches and every insertion would wait on memory (most of a 10^6-run
// comparison's time went there), so the keys are first partitioned by their top bits, stably,
// into parts of about radixPart keys, each grouped with a table small enough to stay cached;
// the groups are then numbered by their first run, which gives the same numbering as one
// table would.
type grouper struct {
	t      keyTable
	order  []int32 // key indices, part by part (stable within a part)
	local  []int32 // each position's group within its part
	first  []int32 // each group's first index, groups part by part
	size   []int32 // each group's size, groups part by part
	newID  []int32 // each group's number in order of first appearance
	starts []int32 // each part's first position, then its first group
	marks  []uint64
	ranks  []int32
}

const (
	radixMin  = 1 << 16
	radixPart = 1 << 12
)

// group sets ids[i] to the group of keys[i], groups numbered in order of first appearance, and
// returns each group's size and first index.
func (g *grouper) group(keys []key128, ids []int32) (count []int64, rep []int32) {
	n := len(keys)
	if n < radixMin {
		g.t.reset(n)
		for i, k := range keys {
			ids[i], _ = g.t.id(k)
		}
		count, rep = make([]int64, g.t.len()), make([]int32, g.t.len())
		for i := n - 1; i >= 0; i-- {
			count[ids[i]]++
			rep[ids[i]] = int32(i)
		}
		return count, rep
	}
	// Partition: parts of about radixPart keys by the first key half's top bits.
	b := 0
	for n>>b > radixPart && b < 16 {
		b++
	}
	parts, shift := 1<<b, uint(64-b)
	starts := grow32(&g.starts, parts+1)
	clear(starts)
	for _, k := range keys {
		starts[k.a>>shift+1]++
	}
	for p := 1; p <= parts; p++ {
		starts[p] += starts[p-1]
	}
	order := grow32(&g.order, n)
	next := append([]int32(nil), starts[:parts]...)
	for i, k := range keys {
		p := k.a >> shift
		order[next[p]] = int32(i)
		next[p]++
	}
	// Group each part; groups are numbered part by part, next[p] becoming the part's first group.
	local := grow32(&g.local, n)
	g.first, g.size = g.first[:0], g.size[:0]
	for p := 0; p < parts; p++ {
		lo, hi := starts[p], starts[p+1]
		base := int32(len(g.first))
		next[p] = base
		g.t.reset(int(hi - lo))
		for pos := lo; pos < hi; pos++ {
			i := order[pos]
			id, inserted := g.t.id(keys[i])
			local[pos] = id
			if inserted {
				g.first = append(g.first, i)
				g.size = append(g.size, 0)
			}
			g.size[base+id]++
		}
	}
	// A group's number is the rank of its first index among all groups' first indices: mark
	// them in a bitmap and count the marks before each word.
	words := n/64 + 1
	marks := grow64(&g.marks, words)
	clear(marks)
	for _, f := range g.first {
		marks[f/64] |= 1 << (f % 64)
	}
	ranks := grow32(&g.ranks, words)
	r := int32(0)
	for w, m := range marks {
		ranks[w] = r
		r += int32(bits.OnesCount64(m))
	}
	groups := len(g.first)
	newID := grow32(&g.newID, groups)
	count, rep = make([]int64, groups), make([]int32, groups)
	for j, f := range g.first {
		id := ranks[f/64] + int32(bits.OnesCount64(marks[f/64]&(1<<(f%64)-1)))
		newID[j] = id
		count[id], rep[id] = int64(g.size[j]), f
	}
	for p := 0; p < parts; p++ {
		base := next[p]
		for pos := starts[p]; pos < starts[p+1]; pos++ {
			ids[order[pos]] = newID[base+local[pos]]
		}
	}
	return count, rep
}

// grow32 returns (*s)[:n], reallocating when its capacity is short.
func grow32(s *[]int32, n int) []int32 {
	if cap(*s) < n {
		*s = make([]int32, n)
	}
	return (*s)[:n]
}

func grow64(s *[]uint64, n int) []uint64 {
	if cap(*s) < n {
		*s = make([]uint64, n)
	}
	return (*s)[:n]
}
