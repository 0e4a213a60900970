package metrics

import "math/bits"

// Exact Argument Consistency at one step without comparing pairs.
//
// For two leaf sets of sizes s1 and s2 sharing I leaves, J = I/(s1+s2−I).
// So the sum of J over pairs needs only, for every pair of size classes
// (s1, s2), how many ordered pairs share exactly i leaves. Count instead
// the pairs sharing each subset S of leaves: with g_s(S) the runs whose
// leaf set has size s and contains S,
//
//	c_j(s1, s2) = Σ_{|S|=j} g_s1(S)·g_s2(S) = Σ_pairs C(I, j),
//
// and binomial inversion gives N_i = Σ_{j≥i} (−1)^{j−i} C(j, i) c_j, all in
// integers. The work is Σ over distinct arguments of 2^(leaves) table
// operations instead of D²/2 Jaccard overlaps, and the integer counts feed
// the same fracSum as the pair loop, so the result is bit-identical to it.
// Row sums (for the jackknife) come from the same table: the subsets of
// one argument's leaf set, looked up in every size class.

// maxSubsetLeaves bounds the leaves of an argument for the subset method
// (2^16 subsets); larger leaf sets use the pair loop.
const maxSubsetLeaves = 16

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// subsetKey lanes: a subset's key is the sum of its leaves' mixed hashes
// in two independent lanes (order-free, so subsets build incrementally);
// the size class is added as one more pseudo-leaf.
func leafLanes(h uint64) key128 { return key128{splitmix(h), splitmix(h ^ 0x5bd1e9955bd1e995)} }

func classLanes(s int) key128 {
	return leafLanes(0xc1a55c1a55000000 + uint64(s))
}

func (k key128) plus(o key128) key128 { return key128{k.a + o.a, k.b + o.b} }

// subsetCost estimates the table operations of the subset method (each
// subset is inserted once and looked up once per size class, twice), or
// -1 when a leaf set is too large for it.
func subsetCost(sets [][]uint64) int {
	var sizes [maxSubsetLeaves + 1]bool
	subsets, classes := 0, 0
	for _, s := range sets {
		if len(s) > maxSubsetLeaves {
			return -1
		}
		if !sizes[len(s)] {
			sizes[len(s)] = true
			classes++
		}
		subsets += 1 << len(s)
	}
	return subsets * (1 + 2*classes)
}

// binom returns C(n, k) for small n.
func binom(n, k int) int64 {
	if k < 0 || k > n {
		return 0
	}
	r := int64(1)
	for i := 1; i <= k; i++ {
		r = r * int64(n-k+i) / int64(i)
	}
	return r
}

// acSubsets adds the ordered pairs of distinct runs at one step to fs and
// fills rowSum[a] = Σ_b n_b J(a, b) (self included) for every distinct
// argument a with leaf set sets[a] and multiplicity counts[a].
// subsetScratch holds acSubsets' buffers, reused across steps.
type subsetScratch struct {
	common  []uint64
	reduced [][]uint64
	arena   []uint64
	t       keyTable
	g       []int64
	es      []subsetEntry
	own     []int32
	sub     []key128
}

type subsetEntry struct {
	base key128
	j, s int8
}

func acSubsets(sets [][]uint64, counts []int64, fs *fracSum, rowSum []float64, sc *subsetScratch) {
	t := &sc.t
	// Leaves shared by every argument at this step (a constant field, the
	// step index) are in every intersection: strip them and add their
	// number u back, J = (i+u)/(s1+s2+u−i). Each one halves the subsets.
	sets, u := stripCommon(sets, sc)
	maxS := 0
	for _, s := range sets {
		maxS = max(maxS, len(s))
	}
	classTotal := make([]int64, maxS+1) // runs per size class
	for a, s := range sets {
		classTotal[len(s)] += counts[a]
	}
	var classes []int
	for s, c := range classTotal {
		if c > 0 {
			classes = append(classes, s)
		}
	}
	cl := make([]key128, maxS+1)
	for s := range cl {
		cl[s] = classLanes(s)
	}
	// Build g: one entry per (subset, size class).
	entries := 0
	for _, s := range sets {
		entries += 1 << len(s)
	}
	t.reset(entries)
	if cap(sc.g) < entries {
		sc.g = make([]int64, 0, entries)
		sc.es = make([]subsetEntry, 0, entries)
		sc.own = make([]int32, 0, entries)
	}
	g, es, own := sc.g[:0], sc.es[:0], sc.own[:0] // own: ids of each argument's subsets in its own class
	if cap(sc.sub) < 1<<maxS {
		sc.sub = make([]key128, 1<<maxS)
	}
	sub := sc.sub
	lanes := make([]key128, maxS)
	defer func() { sc.g, sc.es, sc.own = g, es, own }()
	for a, set := range sets {
		for i, h := range set {
			lanes[i] = leafLanes(h)
		}
		s := len(set)
		for mask := 0; mask < 1<<s; mask++ {
			if mask > 0 {
				low := bits.TrailingZeros(uint(mask))
				sub[mask] = sub[mask&(mask-1)].plus(lanes[low])
			}
			id, inserted := t.id(sub[mask].plus(cl[s]))
			if inserted {
				g = append(g, 0)
				es = append(es, subsetEntry{base: sub[mask], j: int8(bits.OnesCount(uint(mask))), s: int8(s)})
			}
			g[id] += counts[a]
			own = append(own, id)
		}
	}
	lookup := func(base key128, s int) int64 {
		if id, ok := t.find(base.plus(cl[s])); ok {
			return g[id]
		}
		return 0
	}
	// c[s1][s2][j] over ordered pairs of runs (self pairs included).
	c := make([][][]int64, maxS+1)
	for s1 := range c {
		c[s1] = make([][]int64, maxS+1)
		for s2 := range c[s1] {
			c[s1][s2] = make([]int64, min(s1, s2)+1)
		}
	}
	for n, en := range es {
		for _, s2 := range classes {
			if s2 < int(en.j) {
				continue
			}
			g2 := g[n] // the entry itself
			if s2 != int(en.s) {
				g2 = lookup(en.base, s2)
			}
			if g2 != 0 {
				c[en.s][s2][en.j] += g[n] * g2
			}
		}
	}
	for _, s1 := range classes {
		for _, s2 := range classes {
			cj := c[s1][s2]
			if s1 == s2 {
				for j := range cj {
					cj[j] -= classTotal[s1] * binom(s1, j) // a run with itself
				}
			}
			for i := range cj {
				var ni int64
				for j := i; j < len(cj); j++ {
					term := binom(j, i) * cj[j]
					if (j-i)%2 == 1 {
						term = -term
					}
					ni += term
				}
				fs.add(i+u, s1+s2+u-i, ni) // both empty: (0, 0), which fracSum scores 1
			}
		}
	}
	// Row sums.
	cnt := make([]int64, maxS+1)
	off := 0
	for a, set := range sets {
		sa := len(set)
		ids := own[off : off+1<<sa]
		off += 1 << sa
		if len(classes) > 1 {
			for i, h := range set {
				lanes[i] = leafLanes(h)
			}
			for mask := 1; mask < 1<<sa; mask++ {
				low := bits.TrailingZeros(uint(mask))
				sub[mask] = sub[mask&(mask-1)].plus(lanes[low])
			}
		}
		var r float64
		for _, s2 := range classes {
			m := min(sa, s2)
			clear(cnt[:m+1])
			for mask := 0; mask < 1<<sa; mask++ {
				j := bits.OnesCount(uint(mask))
				switch {
				case j > m:
				case s2 == sa:
					cnt[j] += g[ids[mask]]
				default:
					cnt[j] += lookup(sub[mask], s2)
				}
			}
			for i := 0; i <= m; i++ {
				var ni int64
				for j := i; j <= m; j++ {
					term := binom(j, i) * cnt[j]
					if (j-i)%2 == 1 {
						term = -term
					}
					ni += term
				}
				switch {
				case sa == 0 && s2 == 0:
					r += float64(ni)
				case ni != 0:
					r += float64(ni) * float64(i+u) / float64(sa+s2+u-i)
				}
			}
		}
		rowSum[a] = r
	}
}

// stripCommon removes the leaves present in every set and returns the
// reduced sets (in scratch memory) and the number removed.
func stripCommon(sets [][]uint64, sc *subsetScratch) ([][]uint64, int) {
	if len(sets) == 0 {
		return sets, 0
	}
	common := append(sc.common[:0], sets[0]...)
	for _, s := range sets[1:] {
		if len(common) == 0 {
			break
		}
		k := 0
		i := 0
		for _, h := range common {
			for i < len(s) && s[i] < h {
				i++
			}
			if i < len(s) && s[i] == h {
				common[k] = h
				k++
			}
		}
		common = common[:k]
	}
	sc.common = common
	if len(common) == 0 {
		return sets, 0
	}
	out := sc.reduced[:0]
	arena := sc.arena[:0]
	for _, s := range sets {
		start := len(arena)
		c := 0
		for _, h := range s {
			for c < len(common) && common[c] < h {
				c++
			}
			if c < len(common) && common[c] == h {
				continue
			}
			arena = append(arena, h)
		}
		out = append(out, arena[start:len(arena):len(arena)])
	}
	sc.reduced, sc.arena = out, arena
	return out, len(common)
}
