package metrics

import "math/bits"

// divergence returns, for each step k = 0 … maxLen−1, the share of
// unordered pairs of runs whose call sequences already differ at or before
// step k (a run without a call at k differs there from a run with one).
//
// It refines a partition of the distinct call sequences one step at a time
// (prefix classes). Two runs of one distinct sequence agree at every step,
// so a class holding a single distinct sequence (or sequences that have
// ended) can never split again: it is closed, its agreeing pairs are
// banked, and it leaves the loop. The cost is O(Σ over distinct sequences
// of the steps until their prefix is unique), never a pair loop. Null (nil)
// for N < 2.
func divergence(runs []Run, n int, g *grouping) []Value {
	if n < 2 {
		return nil
	}
	maxLen := 0
	for _, r := range g.rep {
		maxLen = max(maxLen, len(runs[r].Calls))
	}
	h := newHasher()
	endKey := key128{0x656e645f6f665f63, 0x616c6c735f5f5f5f} // sequence ended
	class := make([]int32, g.distinct())                     // prefix class of each live group
	live := make([]int32, g.distinct())
	for i := range live {
		live[i] = int32(i)
	}
	var t keyTable
	var counts, groups []int64
	var closed int64 // Σ n(n−1) over closed classes
	total := float64(n) * float64(n-1)
	out := make([]Value, maxLen)
	var buf []byte
	k := 0
	for ; k < maxLen && len(live) > 0; k++ {
		t.reset(len(live))
		counts, groups = counts[:0], groups[:0]
		for _, grp := range live {
			calls := runs[g.rep[grp]].Calls
			key := endKey
			if len(calls) > k {
				buf = appendString(appendString(buf[:0], calls[k].Tool), calls[k].Args)
				key = h.key(buf)
			}
			// Fold the previous class into the key: (prev, call) → class.
			p := uint64(class[grp]) + 1
			key.a ^= p * 0x9e3779b97f4a7c15
			key.b ^= bits.RotateLeft64(p*0xc2b2ae3d27d4eb4f, 31)
			id, inserted := t.id(key)
			if inserted {
				counts = append(counts, 0)
				groups = append(groups, 0)
			}
			counts[id] += g.count[grp]
			groups[id]++
			class[grp] = id
		}
		agree := closed
		for id, c := range counts {
			agree += c * (c - 1)
			if groups[id] == 1 {
				closed += c * (c - 1)
			}
		}
		next := live[:0]
		for _, grp := range live {
			if groups[class[grp]] > 1 {
				next = append(next, grp)
			}
		}
		live = next
		out[k] = Some(1 - float64(agree)/float64(total))
	}
	// Every class is closed: the share no longer changes.
	for ; k < maxLen; k++ {
		out[k] = Some(1 - float64(closed)/total)
	}
	return out
}
