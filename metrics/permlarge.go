package metrics

import (
	"fmt"
	"math"
)

// classWork bounds B × D, the hypergeometric draws of an agreement's test
// by counts (tens of nanoseconds each); beyond, the test is asymptotic.
const classWork = 1 << 24

// poolSamplePairs bounds the pairs sampled for the pool's moments when
// they cannot be computed exactly: 1,024 anchors of 64 partners estimate
// the SD of Δ to about 2%.
const poolSamplePairs = 1 << 16

// permuteCounts makes the permutation tests of a pool beyond
// PermRunLevelMax, each quantity on its own: by class counts (MethodCounts)
// when its classes are few enough, asymptotically otherwise.
func permuteCounts(pool pooled, pix *index, ma, mb CellMetrics, out []Comparison, cfg CompareConfig) {
	n, m := int64(pool.len()), int64(len(pool.a))
	est := [numPermQ][2]Estimate{{ma.RR, mb.RR}, {ma.DI, mb.DI}, {ma.TSS, mb.TSS}, {ma.AC, mb.AC}}
	maxClasses := max(1, classWork/cfg.Permutations)
	for q := range out {
		ea, eb := est[q][0], est[q][1]
		if !ea.Value.Valid || !eb.Value.Valid {
			out[q].Reason = undefinedReason(out[q].Quantity)
			continue
		}
		r := newRNG(cfg.Seed, streamPermutation^uint64(q+1)*0x9e3779b97f4a7c15)
		var (
			class []int32
			size  []int64
			stat  countStat
			mo    permMoments
		)
		switch q {
		case qRR:
			g := &pix.g[kTrace]
			if nonSingletons(g) <= maxClasses {
				class, size = classesOf(int(n), func(i int) int64 {
					if id := g.id[i]; g.count[id] >= 2 {
						return int64(id)
					}
					return -1
				})
				stat = agreementCountStat(size, m, n)
			} else {
				mo = agreementMoments(g.count)
			}
		case qDI:
			parts := [3]*grouping{&pix.g[kTools], &pix.g[kStates], &pix.g[kOutput]}
			if max(nonSingletons(parts[0]), nonSingletons(parts[1]), nonSingletons(parts[2])) <= maxClasses {
				class, size, stat = diClasses(parts, m, n)
			}
			if len(size) > maxClasses || stat == nil {
				class, size, stat = nil, nil, nil
				mo = diMoments(parts)
			}
		case qTSS:
			g := &pix.g[kTools]
			seqs := internTools(pool, g)
			switch {
			case g.distinct() <= cfg.PermExactDistinct:
				class, size = g.id, g.count
				stat = pairCountStat(denseTSS(g, seqs), size, m, n)
			case g.distinct() <= cfg.Cell.MaxExactDistinct:
				mo = tssMoments(g, seqs)
			default:
				mo = sampledMoments(int(n), min(cfg.Cell.SamplePairs, poolSamplePairs), r, tssPair(g, seqs))
			}
		case qAC:
			g := &pix.g[kArgs]
			if g.distinct() <= cfg.PermExactDistinct {
				class, size = g.id, g.count
				stat = pairCountStat(denseAC(pool, g), size, m, n)
				break
			}
			pf := acPairGrouped(pool, g)
			budget := -1
			if g.distinct() > cfg.Cell.MaxExactDistinct {
				budget = cfg.Cell.MaxSubsetWork
			}
			var sums pairSums
			ok := budget != 0 && (budget < 0 || g.distinct() <= budget/64)
			if ok {
				sums, ok = acSums(pool, g, budget)
			}
			if ok && sums.den > 0 {
				mo = sumsMoments(g, sums, min(cfg.Cell.SamplePairs, poolSamplePairs), r, pf)
			} else {
				mo = sampledMoments(int(n), min(cfg.Cell.SamplePairs, poolSamplePairs), r, pf)
			}
		}
		c := &out[q]
		if stat != nil {
			obsX := countsIn(class, len(size), 0, int(m))
			obs, p, se, valid, ok := countTest(newCountPerm(size, n, m, r), obsX, stat, cfg.Permutations)
			if !ok {
				c.Reason = undefinedReason(c.Quantity)
				continue
			}
			c.Method, c.Statistic, c.P, c.PSE = MethodCounts, Some(obs), p, se
			c.Note = fmt.Sprintf("B = %d relabellings drawn as counts of %d classes of runs (%d with the statistic defined), seed %d",
				cfg.Permutations, len(size), valid, cfg.Seed)
			continue
		}
		obs := eb.Value.V - ea.Value.V
		sd := mo.sd(m)
		// A sampled cell value adds its own Monte Carlo error to Δ's.
		v := sd * sd
		for _, e := range [2]Estimate{ea, eb} {
			if e.Estimated && e.SamplingSE.Valid {
				v += e.SamplingSE.V * e.SamplingSE.V
			}
		}
		c.Method, c.Statistic, c.P = MethodAsymptotic, Some(obs), Some(asymptoticP(obs, math.Sqrt(v)))
		c.Note = fmt.Sprintf("normal approximation of the permutation test: SD of Δ over relabellings %.3g (cell values' sampling error included), %d runs pooled",
			math.Sqrt(v), n)
	}
}

// nonSingletons counts the groups of two runs or more.
func nonSingletons(g *grouping) int {
	k := 0
	for _, c := range g.count {
		if c >= 2 {
			k++
		}
	}
	return k
}

// diClasses returns the joint (tools, states, output) classes of the pool,
// a group that holds one run counting as none, and DI's statistic over
// them.
func diClasses(parts [3]*grouping, m, n int64) (class []int32, size []int64, stat countStat) {
	// local[k][id]: the group's number among kind k's non-singleton groups.
	var local [3][]int32
	var groupSize [3][]int64
	for k, g := range parts {
		local[k] = make([]int32, g.distinct())
		for id, c := range g.count {
			local[k][id] = -1
			if c >= 2 {
				local[k][id] = int32(len(groupSize[k]))
				groupSize[k] = append(groupSize[k], c)
			}
		}
	}
	var pairs keyTable
	pairs.reset(int(n))
	class, size = classesOf(int(n), func(i int) int64 {
		t, s, o := local[0][parts[0].id[i]], local[1][parts[1].id[i]], local[2][parts[2].id[i]]
		if t < 0 && s < 0 && o < 0 {
			return -1
		}
		k1 := uint64(uint32(t))<<32 | uint64(uint32(s))
		ts, _ := pairs.id(key128{mix64(k1), k1})
		return int64(uint64(ts)<<32 | uint64(uint32(o)))
	})
	var group [3][]int32
	for k := range group {
		group[k] = make([]int32, len(size))
	}
	for i, c := range class {
		if c >= 0 {
			for k, g := range parts {
				group[k][c] = local[k][g.id[i]]
			}
		}
	}
	return class, size, diCountStat(group, groupSize, m, n)
}
