package metrics

import "math"

// This file computes the two pairwise metrics that are not agreements of a
// signature, Tool Sequence Similarity and Argument Consistency, with their
// jackknife standard errors. Both are ratios over ordered pairs of distinct
// runs, θ = Num/Den, where run r contributes the row sums numRow_r =
// Σ_{j≠r} num(r, j) and denRow_r = Σ_{j≠r} den(r, j). Leaving run r out
// gives θ₋r = (Num − 2·numRow_r) / (Den − 2·denRow_r): no pair loop, and runs
// of one group share their leave-one-out value.

// jackknifeGroups returns the jackknife SE from per-group leave-one-out
// values: SE² = (N−1)/N · Σ_g w_g (θ_g − θ̄)², θ̄ = Σ w_g θ_g / N. ok is false
// when a leave-one-out value is undefined.
func jackknifeGroups(n int, w []int64, loo func(g int) (float64, bool)) Value {
	if n < 3 {
		return Null
	}
	vals := make([]float64, len(w))
	var mean float64
	for g := range w {
		if w[g] == 0 {
			continue
		}
		v, ok := loo(g)
		if !ok {
			return Null
		}
		vals[g] = v
		mean += float64(w[g]) * v
	}
	mean /= float64(n)
	var ss float64
	for g := range w {
		d := vals[g] - mean
		ss += float64(w[g]) * d * d
	}
	return Some(math.Sqrt(float64(n-1) / float64(n) * ss))
}

// internTools maps each tools group's sequence to small integers so that
// Levenshtein compares ints rather than strings.
func internTools(runs pooled, g *grouping) [][]int32 {
	names := map[string]int32{}
	seqs := make([][]int32, g.distinct())
	for k, r := range g.rep {
		tools := runs.at(int(r)).Tools
		s := make([]int32, len(tools))
		for i, t := range tools {
			id, ok := names[t]
			if !ok {
				id = int32(len(names))
				names[t] = id
			}
			s[i] = id
		}
		seqs[k] = s
	}
	return seqs
}

// tssExact computes TSS over the D distinct tool sequences: D(D−1)/2
// Levenshtein distances weighted by multiplicities.
func tssExact(n int, g *grouping, seqs [][]int32) Estimate {
	if n < 2 {
		return Estimate{}
	}
	d := g.distinct()
	row := make([]float64, d) // R_g = Σ_h n_h s(g,h), self included
	alphabet, maxLen := 0, 0
	for _, s := range seqs {
		maxLen = max(maxLen, len(s))
		for _, c := range s {
			alphabet = max(alphabet, int(c)+1)
		}
	}
	// byDen[m] accumulates (m − dist)·weight over ordered pairs whose longer
	// sequence has m steps: the fracSum of the pair loop, unrolled. Pairs of
	// distinct groups have distinct sequences, so dist > 0 and m > 0.
	fs := fracSum{byDen: make([]int64, maxLen+1)}
	inv := make([]float64, maxLen+1)
	for m := 1; m <= maxLen; m++ {
		inv[m] = 1 / float64(m)
	}
	peq := make([]uint64, alphabet)
	var scratch []int
	for a := 0; a < d; a++ {
		na := g.count[a]
		fs.ones += na * (na - 1)
		row[a] += float64(na)
		sa := seqs[a]
		la := len(sa)
		if la == 0 || la > 64 {
			for b := a + 1; b < d; b++ {
				m := max(la, len(seqs[b]))
				dist := levenshtein(sa, seqs[b], &scratch)
				nb := g.count[b]
				fs.byDen[m] += int64(m-dist) * 2 * na * nb
				s := float64(m-dist) * inv[m]
				row[a] += float64(nb) * s
				row[b] += float64(na) * s
			}
			continue
		}
		// Myers' bit-parallel distance: the pattern's masks are set once for all
		// its partners.
		for i, c := range sa {
			peq[c] |= 1 << i
		}
		rowA := 0.0
		fna := float64(na)
		for b := a + 1; b < d; b++ {
			sb := seqs[b]
			dist := myers(peq, la, sb)
			m := max(la, len(sb))
			nb := g.count[b]
			fs.byDen[m] += int64(m-dist) * 2 * na * nb
			s := float64(m-dist) * inv[m]
			rowA += float64(nb) * s
			row[b] += fna * s
		}
		row[a] += rowA
		for _, c := range sa {
			peq[c] = 0
		}
	}
	num := fs.value()
	den := float64(n) * float64(n-1)
	e := Estimate{Value: Some(num / den)}
	looDen := float64(n-1) * float64(n-2)
	e.SE = jackknifeGroups(n, g.count, func(k int) (float64, bool) {
		return (num - 2*(row[k]-1)) / looDen, true
	})
	return e
}

// acExact computes AC position by position over the distinct argument
// sequences: at step k the runs with a call at k are grouped by their
// argument bytes, and the Jaccard overlap is evaluated once per pair of
// distinct arguments.
//
// budget bounds the work: a step whose cheaper method costs more than the
// remaining budget (in pair or subset-table operations) stops the
// computation and ok is false; budget < 0 means unlimited.
func acExact(runs pooled, n int, g *grouping, budget int) (e Estimate, ok bool) {
	if n < 2 {
		return Estimate{}, true
	}
	s, ok := acSums(runs, g, budget)
	if !ok {
		return Estimate{}, false
	}
	if s.den == 0 {
		return Estimate{}, true
	}
	e = Estimate{Value: Some(s.num / s.den)}
	e.SE = jackknifeGroups(n, g.count, func(k int) (float64, bool) {
		dd := s.den - 2*s.denRow[k]
		if dd <= 0 {
			return 0, false
		}
		return (s.num - 2*s.numRow[k]) / dd, true
	})
	return e, true
}

// pairSums are the sums over ordered pairs of distinct runs of a ratio
// statistic Σ num / Σ den, and each group's row sums: numRow[g] =
// Σ_{j≠r} num(r, j) for a run r of group g, likewise denRow.
type pairSums struct {
	num, den       float64
	numRow, denRow []float64
}

// acSums computes AC's pairSums exactly (see acExact for budget).
func acSums(runs pooled, g *grouping, budget int) (pairSums, bool) {
	d := g.distinct()
	maxLen := 0
	for _, r := range g.rep {
		maxLen = max(maxLen, len(runs.at(int(r)).Calls))
	}
	numRow := make([]float64, d)
	denRow := make([]float64, d)
	var fs fracSum
	var den int64
	var p leafParser
	local := map[string]int32{}
	var counts []int64
	var sets [][]uint64
	var rowSum []float64
	var localOf []int32
	var scratch subsetScratch
	var arena []uint64
	for k := 0; k < maxLen; k++ {
		clear(local)
		counts, sets, localOf = counts[:0], sets[:0], localOf[:0]
		arena = arena[:0] // the previous step's sets are no longer used
		var m int64
		for grp, r := range g.rep {
			calls := runs.at(int(r)).Calls
			if len(calls) <= k {
				localOf = append(localOf, -1)
				continue
			}
			args := calls[k].Args
			id, ok := local[args]
			if !ok {
				id = int32(len(counts))
				local[args] = id
				counts = append(counts, 0)
				// One arena per step: a set is a full slice expression
				// into it, so later appends never write over it.
				start := len(arena)
				arena = p.appendLeafSet(args, arena)
				sets = append(sets, arena[start:len(arena):len(arena)])
			}
			counts[id] += g.count[grp]
			m += g.count[grp]
			localOf = append(localOf, id)
		}
		if m < 2 {
			continue
		}
		den += m * (m - 1)
		rowSum = append(rowSum[:0], make([]float64, len(counts))...)
		pairs := len(counts) * (len(counts) - 1) / 2
		cost := subsetCost(sets)
		useSubsets := cost >= 0 && cost < pairs
		if !useSubsets {
			cost = pairs
		}
		if budget >= 0 {
			if cost > budget {
				return pairSums{}, false
			}
			budget -= cost
		}
		if useSubsets {
			acSubsets(sets, counts, &fs, rowSum, &scratch)
		} else {
			acPairLoop(sets, counts, &fs, rowSum)
		}
		for grp, id := range localOf {
			if id >= 0 {
				numRow[grp] += rowSum[id] - 1
				denRow[grp] += float64(m - 1)
			}
		}
	}
	return pairSums{num: fs.value(), den: float64(den), numRow: numRow, denRow: denRow}, true
}

// acPairLoop is the D²/2 form of acSubsets.
func acPairLoop(sets [][]uint64, counts []int64, fs *fracSum, rowSum []float64) {
	{
		for a := range counts {
			ca := counts[a]
			fs.add(1, 1, ca*(ca-1))
			rowSum[a] += float64(ca)
			for b := a + 1; b < len(counts); b++ {
				cb := counts[b]
				inter, union := jaccardCounts(sets[a], sets[b])
				fs.add(inter, union, 2*ca*cb)
				j := 1.0
				if union > 0 {
					j = float64(inter) / float64(union)
				}
				rowSum[a] += float64(cb) * j
				rowSum[b] += float64(ca) * j
			}
		}
	}
}

// pairFunc returns the numerator and denominator contributions of the
// ordered pair of runs (i, j), i ≠ j. anchorChanged is true when i differs
// from the previous call's i, so implementations may cache per anchor.
type pairFunc func(i, j int, anchorChanged bool) (num, den float64)

// Anchors per sample: each anchor run is paired with this many partners.
const partnersPerAnchor = 64

// sampledRatio estimates θ = Num/Den from a seeded uniform sample of
// ordered run pairs, drawn as A anchor runs (uniform) each with m partners
// (uniform among the other runs, with replacement), so every sampled pair is
// uniform over the N(N−1) ordered pairs. Anchors are independent, which
// gives the Monte Carlo SE (delta method for the ratio) and an estimate of
// the jackknife SE: the anchor means estimate each run's row mean, whose
// variance over runs (less the within-anchor noise) is what the jackknife
// measures (see doc.go).
func sampledRatio(n, pairs int, seed, stream uint64, f pairFunc) Estimate {
	if n < 2 {
		return Estimate{}
	}
	m := min(partnersPerAnchor, pairs)
	a := max(2, (pairs+m-1)/m)
	r := newRNG(seed, stream)
	us := make([]float64, a)
	vs := make([]float64, a)
	nums := make([]float64, m)
	dens := make([]float64, m)
	within := make([]float64, a) // filled after θ̂ is known: needs the pairs
	type anchorPairs struct{ nums, dens []float64 }
	keep := make([]anchorPairs, a)
	for k := 0; k < a; k++ {
		i := int(r.below(uint64(n)))
		var su, sv float64
		for t := 0; t < m; t++ {
			j := int(r.below(uint64(n - 1)))
			if j >= i {
				j++
			}
			nums[t], dens[t] = f(i, j, t == 0)
			su += nums[t]
			sv += dens[t]
		}
		us[k], vs[k] = su/float64(m), sv/float64(m)
		keep[k] = anchorPairs{append([]float64(nil), nums...), append([]float64(nil), dens...)}
	}
	var mu, mv float64
	for k := range us {
		mu += us[k]
		mv += vs[k]
	}
	mu /= float64(a)
	mv /= float64(a)
	if mv == 0 {
		return Estimate{Estimated: true}
	}
	theta := mu / mv
	// Linearised anchor values g_a = ū_a − θ̂ v̄_a.
	var gm, gss, wmean float64
	gs := make([]float64, a)
	for k := range us {
		gs[k] = us[k] - theta*vs[k]
		gm += gs[k]
	}
	gm /= float64(a)
	for k := range gs {
		d := gs[k] - gm
		gss += d * d
		if m > 1 {
			var s, ss float64
			for t := range keep[k].nums {
				s += keep[k].nums[t] - theta*keep[k].dens[t]
			}
			s /= float64(m)
			for t := range keep[k].nums {
				d := keep[k].nums[t] - theta*keep[k].dens[t] - s
				ss += d * d
			}
			within[k] = ss / float64(m-1)
			wmean += within[k]
		}
	}
	wmean /= float64(a)
	varG := gss / float64(a-1)
	e := Estimate{
		Value:      Some(theta),
		Estimated:  true,
		SamplingSE: Some(math.Sqrt(varG/float64(a)) / mv),
	}
	if n >= 3 {
		popVar := max(0, varG-wmean/float64(m))
		nf := float64(n)
		denLOO := nf * (nf - 1) * mv * (nf - 2) / nf
		e.SE = Some(math.Sqrt((nf - 1) * popVar * math.Pow(2*(nf-1)/denLOO, 2)))
	}
	return e
}

// tssPair returns the TSS pair function over interned tool sequences.
func tssPair(g *grouping, seqs [][]int32) pairFunc {
	var scratch []int
	return func(i, j int, _ bool) (float64, float64) {
		a, b := seqs[g.id[i]], seqs[g.id[j]]
		m := max(len(a), len(b))
		if m == 0 {
			return 1, 1
		}
		return 1 - float64(levenshtein(a, b, &scratch))/float64(m), 1
	}
}

// acPair returns the AC pair function: the sum of the Jaccard overlaps at
// the aligned positions and their number. The anchor's leaf sets are parsed
// once per anchor.
func acPair(runs []Run) pairFunc {
	var p leafParser
	var anchor [][]uint64
	var other []uint64
	return func(i, j int, changed bool) (float64, float64) {
		if changed {
			calls := runs[i].Calls
			anchor = anchor[:0]
			for _, c := range calls {
				anchor = append(anchor, p.leafSet(c.Args, nil))
			}
		}
		cj := runs[j].Calls
		k := min(len(anchor), len(cj))
		var s float64
		for t := 0; t < k; t++ {
			other = p.leafSet(cj[t].Args, other)
			inter, union := jaccardCounts(anchor[t], other)
			if union == 0 {
				s++
			} else {
				s += float64(inter) / float64(union)
			}
		}
		return s, float64(k)
	}
}

// acPairGrouped is acPair for repeated sampling (the permutation test):
// leaf sets are parsed once per distinct argument sequence, on first use.
func acPairGrouped(runs pooled, g *grouping) pairFunc {
	var p leafParser
	sets := make([][][]uint64, g.distinct())
	done := make([]bool, g.distinct())
	get := func(i int) [][]uint64 {
		id := g.id[i]
		if !done[id] {
			for _, c := range runs.at(int(g.rep[id])).Calls {
				sets[id] = append(sets[id], p.leafSet(c.Args, nil))
			}
			done[id] = true
		}
		return sets[id]
	}
	return func(i, j int, _ bool) (float64, float64) {
		a, b := get(i), get(j)
		k := min(len(a), len(b))
		var s float64
		for t := 0; t < k; t++ {
			inter, union := jaccardCounts(a[t], b[t])
			if union == 0 {
				s++
			} else {
				s += float64(inter) / float64(union)
			}
		}
		return s, float64(k)
	}
}
