package metrics

// divergence returns, for each step k = 0 … maxLen−1, the share of
// unordered pairs of runs whose call sequences already differ at or before
// step k (a run without a call at k differs there from a run with one).
// It refines a partition of the distinct call sequences one step at a time
// (prefix classes), so it costs O(Σ over distinct call sequences of their
// length), never a pair loop. Null (nil) for N < 2.
func divergence(runs []Run, n int, g *grouping) []Value {
	if n < 2 {
		return nil
	}
	maxLen := 0
	for _, r := range g.rep {
		maxLen = max(maxLen, len(runs[r].Calls))
	}
	type classKey struct {
		prev int32
		call key128
		end  bool
	}
	h := newHasher()
	class := make([]int32, g.distinct()) // prefix class of each group; 0 = empty prefix
	live := make([]int32, g.distinct())
	for i := range live {
		live[i] = int32(i)
	}
	ids := map[classKey]int32{}
	var counts []int64
	var ended []bool
	var closed int64 // Σ n(n−1) over classes of sequences that have ended
	total := float64(n) * float64(n-1)
	out := make([]Value, maxLen)
	var buf []byte
	for k := 0; k < maxLen; k++ {
		clear(ids)
		counts, ended = counts[:0], ended[:0]
		next := live[:0]
		for _, grp := range live {
			calls := runs[g.rep[grp]].Calls
			key := classKey{prev: class[grp]}
			if len(calls) > k {
				buf = appendString(appendString(buf[:0], calls[k].Tool), calls[k].Args)
				key.call = h.key(buf)
				next = append(next, grp)
			} else {
				key.end = true
			}
			id, ok := ids[key]
			if !ok {
				id = int32(len(counts))
				ids[key] = id
				counts = append(counts, 0)
				ended = append(ended, key.end)
			}
			counts[id] += g.count[grp]
			class[grp] = id
		}
		live = next
		agree := closed
		for id, c := range counts {
			agree += c * (c - 1)
			if ended[id] {
				closed += c * (c - 1)
			}
		}
		out[k] = Some(1 - float64(agree)/total)
	}
	return out
}
