package metrics

// permEngine evaluates RR, DI, TSS and AC on both sides of a label
// assignment of a pooled pair of cells without re-hashing runs: the pooled
// runs are grouped once, and each replicate only counts group members
// (O(n)) and, for TSS and AC, sums a precomputed group×group matrix over
// the groups present (O(D²) with D ≤ PermExactDistinct), or, beyond that,
// estimates them from a fixed number of sampled pairs per side.
type permEngine struct {
	agree   [4]*grouping // trace, tools, states, output
	totalP  [4]int64     // Σ n(n−1) over the pool, per grouping
	cnt     []int64
	touched []int32
	tss, ac pairForm
}

// Indices into permEngine.agree and into the statistics vector.
const (
	qRR = iota
	qDI
	qTSS
	qAC
	numPermQ
)

func newPermEngine(pool []Run, ix *index, cfg CompareConfig) *permEngine {
	e := &permEngine{
		agree: [4]*grouping{&ix.g[kTrace], &ix.g[kTools], &ix.g[kStates], &ix.g[kOutput]},
	}
	maxD := 0
	for q, g := range e.agree {
		maxD = max(maxD, g.distinct())
		_, e.totalP[q], _ = agreementSums(g.count)
	}
	e.cnt = make([]int64, maxD)
	tg := &ix.g[kTools]
	seqs := internTools(pooled{a: pool}, tg)
	if tg.distinct() <= cfg.PermExactDistinct {
		e.tss = denseTSS(tg, seqs)
	} else {
		e.tss = pairForm{sampled: true, pf: tssPair(tg, seqs), pairs: cfg.PermSamplePairs, r: newRNG(cfg.Seed, streamTSS^streamPermutation)}
	}
	ag := &ix.g[kArgs]
	if ag.distinct() <= cfg.PermExactDistinct {
		e.ac = denseAC(pooled{a: pool}, ag)
	} else {
		e.ac = pairForm{sampled: true, pf: acPairGrouped(pooled{a: pool}, ag), pairs: cfg.PermSamplePairs, r: newRNG(cfg.Seed, streamAC^streamPermutation)}
	}
	return e
}

// stats returns RR, DI, TSS and AC of the runs idxA and of the runs idxB,
// which together are the whole pool. The agreement counts of side B are
// the pool's totals less side A's, so only the smaller side is counted.
func (e *permEngine) stats(idxA, idxB []int32) (sa, sb [numPermQ]Value) {
	small, swapped := idxA, false
	if len(idxB) < len(idxA) {
		small, swapped = idxB, true
	}
	ms, mo := float64(len(small)), float64(len(idxA)+len(idxB)-len(small))
	var as, ao [4]float64
	for q, g := range e.agree {
		e.touched = e.touched[:0]
		for _, i := range small {
			id := g.id[i]
			if e.cnt[id] == 0 {
				e.touched = append(e.touched, id)
			}
			e.cnt[id]++
		}
		ps, po := int64(0), e.totalP[q]
		for _, id := range e.touched {
			c, t := e.cnt[id], g.count[id]
			ps += c * (c - 1)
			po += (t-c)*(t-c-1) - t*(t-1)
			e.cnt[id] = 0
		}
		as[q] = float64(ps) / (ms * (ms - 1))
		ao[q] = float64(po) / (mo * (mo - 1))
	}
	fill := func(out *[numPermQ]Value, a [4]float64, m float64) {
		if m >= 2 {
			out[qRR] = Some(a[0])
			out[qDI] = Some((a[1] + a[2] + a[3]) / 3)
		}
	}
	if swapped {
		fill(&sb, as, ms)
		fill(&sa, ao, mo)
	} else {
		fill(&sa, as, ms)
		fill(&sb, ao, mo)
	}
	sa[qTSS], sa[qAC] = e.tss.value(idxA), e.ac.value(idxA)
	sb[qTSS], sb[qAC] = e.tss.value(idxB), e.ac.value(idxB)
	return sa, sb
}

// pairForm is a pairwise ratio statistic Σ num / Σ den over the ordered
// pairs of distinct runs of one side.
type pairForm struct {
	ids      []int32 // dense: group of each pooled run
	d        int
	num, den []float64 // dense: d×d per-pair contributions; den nil means 1
	cnt      []int64
	touched  []int32

	sampled bool
	pf      pairFunc
	pairs   int
	r       rng
}

func (f *pairForm) value(idx []int32) Value {
	if len(idx) < 2 {
		return Null
	}
	if f.sampled {
		var num, den float64
		n := uint64(len(idx))
		for t := 0; t < f.pairs; t++ {
			i := f.r.below(n)
			j := f.r.below(n - 1)
			if j >= i {
				j++
			}
			a, b := f.pf(int(idx[i]), int(idx[j]), true)
			num += a
			den += b
		}
		if den == 0 {
			return Null
		}
		return Some(num / den)
	}
	f.touched = f.touched[:0]
	for _, i := range idx {
		g := f.ids[i]
		if f.cnt[g] == 0 {
			f.touched = append(f.touched, g)
		}
		f.cnt[g]++
	}
	var num, den float64
	for _, g := range f.touched {
		cg := float64(f.cnt[g])
		row := f.num[int(g)*f.d:]
		for _, h := range f.touched {
			num += cg * float64(f.cnt[h]) * row[h]
		}
		num -= cg * row[g] // pairs of a run with itself
		if f.den != nil {
			drow := f.den[int(g)*f.d:]
			for _, h := range f.touched {
				den += cg * float64(f.cnt[h]) * drow[h]
			}
			den -= cg * drow[g]
		}
	}
	for _, g := range f.touched {
		f.cnt[g] = 0
	}
	if f.den == nil {
		m := float64(len(idx))
		den = m * (m - 1)
	}
	if den <= 0 {
		return Null
	}
	return Some(num / den)
}

func denseTSS(g *grouping, seqs [][]int32) pairForm {
	d := g.distinct()
	f := pairForm{ids: g.id, d: d, num: make([]float64, d*d), cnt: make([]int64, d)}
	var scratch []int
	for a := 0; a < d; a++ {
		f.num[a*d+a] = 1
		for b := a + 1; b < d; b++ {
			s := 1.0
			if m := max(len(seqs[a]), len(seqs[b])); m > 0 {
				s = 1 - float64(levenshtein(seqs[a], seqs[b], &scratch))/float64(m)
			}
			f.num[a*d+b], f.num[b*d+a] = s, s
		}
	}
	return f
}

func denseAC(pool pooled, g *grouping) pairForm {
	d := g.distinct()
	f := pairForm{ids: g.id, d: d, num: make([]float64, d*d), den: make([]float64, d*d), cnt: make([]int64, d)}
	var p leafParser
	sets := make([][][]uint64, d)
	for k, r := range g.rep {
		for _, c := range pool.at(int(r)).Calls {
			sets[k] = append(sets[k], p.leafSet(c.Args, nil))
		}
	}
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			l := min(len(sets[a]), len(sets[b]))
			var s float64
			for t := 0; t < l; t++ {
				inter, union := jaccardCounts(sets[a][t], sets[b][t])
				if union == 0 {
					s++
				} else {
					s += float64(inter) / float64(union)
				}
			}
			f.num[a*d+b], f.num[b*d+a] = s, s
			f.den[a*d+b], f.den[b*d+a] = float64(l), float64(l)
		}
	}
	return f
}
