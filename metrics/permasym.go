package metrics

import (
	"math"
	"slices"
)

// The asymptotic form of the permutation test, for pools whose statistic
// has too many classes to draw their counts.
//
// Each compared metric is θ = Σ num / Σ den over the ordered pairs of
// distinct runs of a cell (den ≡ 1 except for AC). Centre the pair values
// on the pool's ratio θ₀: K(i, j) = num(i, j) − θ₀·den(i, j), so that
// Σ_{i≠j} K = 0 over the pool. For a labelling with cell A of m runs and
// cell B of n − m, T_A = Σ_{i≠j ∈ A} K and T_B likewise, and
//
//	Δ = θ_B − θ_A ≈ T_B / E[Den_B] − T_A / E[Den_A]
//
// (exactly, when den ≡ 1). Over the uniform relabellings, E[T_A] = 0 and
// the variance of these quadratic forms has a closed form in three sums
// over the pool (the moments of a Mantel statistic): with S₁ = Σ_i r_i²,
// r_i = Σ_{j≠i} K(i, j), and S₂ = Σ_{i≠j} K(i, j)²,
//
//	E[T_A²]   = 2S₂·π₂(m) + 4(S₁ − S₂)·π₃(m) + (2S₂ − 4S₁)·π₄(m)
//	E[T_A T_B] = (2S₂ − 4S₁)·π(m, n − m)
//
// where π_k(m) is the chance that k given runs all fall in cell A
// (m(m−1)…/(n(n−1)…)) and π(m, n − m) that two given runs fall in A and two
// others in B. The p-value is the two-sided normal tail of Δ over its
// permutation SD. The variance is exact; the normal shape is the
// approximation, accurate when many classes carry the variation (which is
// when this form is used: few classes are drawn exactly instead) and
// checked against the permutation test in permasym_test.go.

// permMoments are the pool sums of a centred pair kernel.
type permMoments struct {
	n      int64   // pool size
	den    float64 // Σ den over ordered pairs of distinct runs
	s1, s2 float64
}

// sd returns the permutation SD of Δ for relabellings with m runs in
// cell A.
func (mo permMoments) sd(m int64) float64 {
	n := float64(mo.n)
	a, b := float64(m), float64(mo.n-m)
	pi := func(k float64) (p2, p3, p4 float64) {
		p2 = k * (k - 1) / (n * (n - 1))
		p3 = p2 * (k - 2) / (n - 2)
		p4 = p3 * (k - 3) / (n - 3)
		return max(0, p2), max(0, p3), max(0, p4)
	}
	q2, q3, q4 := 2*mo.s2, 4*(mo.s1-mo.s2), 2*mo.s2-4*mo.s1
	a2, a3, a4 := pi(a)
	b2, b3, b4 := pi(b)
	pab := a * (a - 1) * b * (b - 1) / (n * (n - 1) * (n - 2) * (n - 3))
	varA := q2*a2 + q3*a3 + q4*a4
	varB := q2*b2 + q3*b3 + q4*b4
	cov := q4 * pab
	da, db := mo.den*a2, mo.den*b2
	v := varA/(da*da) + varB/(db*db) - 2*cov/(da*db)
	if !(v > 0) {
		return 0
	}
	return math.Sqrt(v)
}

// asymptoticP is the two-sided p of Δ = obs against a normal of SD sd
// (with the permutation tests' tolerance): 1 when sd is 0, since every
// relabelling then gives the same Δ.
func asymptoticP(obs, sd float64) float64 {
	if !(sd > 0) {
		return 1
	}
	d := max(0, math.Abs(obs)*(1-permTolerance)-permTolerance)
	return min(1, math.Erfc(d/sd/math.Sqrt2))
}

// agreementMoments: K = 1 for runs in the same group, 0 otherwise.
func agreementMoments(count []int64) permMoments {
	var n, s0 float64
	for _, c := range count {
		n += float64(c)
		s0 += float64(c) * float64(c-1)
	}
	mu := s0 / (n * (n - 1))
	var s1 float64
	for _, c := range count {
		d := float64(c-1) - (n-1)*mu
		s1 += float64(c) * d * d
	}
	return permMoments{n: int64(n), den: n * (n - 1), s1: s1, s2: s0 * (1 - mu)}
}

// diMoments: K is the mean of the three agreements of DI. parts are the
// pool's tools, states and output groupings (with run ids).
func diMoments(parts [3]*grouping) permMoments {
	n := len(parts[0].id)
	nf := float64(n)
	var s0k [3]float64
	for k, g := range parts {
		for _, c := range g.count {
			s0k[k] += float64(c) * float64(c-1)
		}
	}
	s0 := (s0k[0] + s0k[1] + s0k[2]) / 3
	mu := s0 / (nf * (nf - 1))
	var s1 float64
	for i := 0; i < n; i++ {
		var r float64
		for _, g := range parts {
			r += float64(g.count[g.id[i]] - 1)
		}
		d := r/3 - (nf-1)*mu
		s1 += d * d
	}
	// Σ K² = (1/9) Σ (K_t + K_s + K_o)²: the squares are the agreements'
	// own pair counts, the cross terms count the pairs agreeing in both.
	sq := s0k[0] + s0k[1] + s0k[2]
	for _, pq := range [3][2]int{{0, 1}, {0, 2}, {1, 2}} {
		gx, gy := parts[pq[0]], parts[pq[1]]
		sq += 2 * jointPairs(gx.id, gy.id, gx.distinct(), gy.distinct())
	}
	s2 := sq/9 - mu*s0
	return permMoments{n: int64(n), den: nf * (nf - 1), s1: s1, s2: s2}
}

// jointPairs counts the ordered pairs of distinct runs equal in both
// groupings: Σ c(c − 1) over the joint groups. The runs are bucketed by x
// (a counting sort), and each bucket's y values counted in a scratch array.
func jointPairs(x, y []int32, dx, dy int) float64 {
	start := make([]int32, dx+1)
	for _, v := range x {
		start[v+1]++
	}
	for i := 1; i <= dx; i++ {
		start[i] += start[i-1]
	}
	order := make([]int32, len(x))
	next := slices.Clone(start[:dx])
	for i, v := range x {
		order[next[v]] = int32(i)
		next[v]++
	}
	cnt := make([]int64, dy)
	var touched []int32
	var s float64
	for v := 0; v < dx; v++ {
		touched = touched[:0]
		for _, i := range order[start[v]:start[v+1]] {
			w := y[i]
			if cnt[w] == 0 {
				touched = append(touched, w)
			}
			cnt[w]++
		}
		for _, w := range touched {
			s += float64(cnt[w]) * float64(cnt[w]-1)
			cnt[w] = 0
		}
	}
	return s
}

// tssMoments computes TSS's moments exactly over the D distinct tool
// sequences (D² distances).
func tssMoments(g *grouping, seqs [][]int32) permMoments {
	d := g.distinct()
	row := make([]float64, d) // Σ_h n_h s(g, h), self included
	sq := make([]float64, d)  // Σ_h n_h s(g, h)²
	var scratch []int
	var n float64
	for a := 0; a < d; a++ {
		na := float64(g.count[a])
		n += na
		row[a] += na
		sq[a] += na
		for b := a + 1; b < d; b++ {
			s := 1.0
			if m := max(len(seqs[a]), len(seqs[b])); m > 0 {
				s = 1 - float64(levenshtein(seqs[a], seqs[b], &scratch))/float64(m)
			}
			nb := float64(g.count[b])
			row[a] += nb * s
			row[b] += na * s
			sq[a] += nb * s * s
			sq[b] += na * s * s
		}
	}
	var s0, s2 float64
	for a := 0; a < d; a++ {
		na := float64(g.count[a])
		s0 += na * (row[a] - 1)
		s2 += na * (sq[a] - 1)
	}
	mu := s0 / (n * (n - 1))
	var s1 float64
	for a := 0; a < d; a++ {
		dv := row[a] - 1 - (n-1)*mu
		s1 += float64(g.count[a]) * dv * dv
	}
	return permMoments{n: int64(n), den: n * (n - 1), s1: s1, s2: s2 - mu*s0}
}

// sumsMoments completes exact row sums (AC's) with S₂ estimated from pairs
// sampled with f: a second-order term, which a sample estimates without
// bias.
func sumsMoments(g *grouping, s pairSums, pairs int, r rng, f pairFunc) permMoments {
	var n float64
	for _, c := range g.count {
		n += float64(c)
	}
	theta := s.num / s.den
	var s1 float64
	for k, c := range g.count {
		d := s.numRow[k] - theta*s.denRow[k]
		s1 += float64(c) * d * d
	}
	var sq float64
	for t := 0; t < pairs; t++ {
		i := r.below(uint64(n))
		j := r.below(uint64(n) - 1)
		if j >= i {
			j++
		}
		a, b := f(int(i), int(j), true)
		k := a - theta*b
		sq += k * k
	}
	return permMoments{n: int64(n), den: s.den, s1: s1, s2: n * (n - 1) * sq / float64(pairs)}
}

// sampledMoments estimates every moment from anchors × partners, as
// sampledRatio does: the variance of the runs' row means less the
// anchors' within noise gives S₁, the mean square of the sampled pairs S₂.
func sampledMoments(n, pairs int, r rng, f pairFunc) permMoments {
	m := min(partnersPerAnchor, pairs)
	a := max(2, (pairs+m-1)/m)
	nums := make([]float64, a*m)
	dens := make([]float64, a*m)
	var sn, sd float64
	for k := 0; k < a; k++ {
		i := int(r.below(uint64(n)))
		for t := 0; t < m; t++ {
			j := int(r.below(uint64(n - 1)))
			if j >= i {
				j++
			}
			x, y := f(i, j, t == 0)
			nums[k*m+t], dens[k*m+t] = x, y
			sn += x
			sd += y
		}
	}
	nf := float64(n)
	mo := permMoments{n: int64(n), den: nf * (nf - 1) * sd / float64(a*m)}
	if sd == 0 {
		return mo
	}
	theta := sn / sd
	var gss, within, sq float64
	for k := 0; k < a; k++ {
		var s float64
		for t := 0; t < m; t++ {
			v := nums[k*m+t] - theta*dens[k*m+t]
			s += v
			sq += v * v
		}
		s /= float64(m)
		gss += s * s // the anchors' values have mean 0 by θ's definition
		if m > 1 {
			var w float64
			for t := 0; t < m; t++ {
				v := nums[k*m+t] - theta*dens[k*m+t] - s
				w += v * v
			}
			within += w / float64(m-1)
		}
	}
	rowVar := max(0, gss/float64(a-1)-within/float64(a)/float64(m))
	mo.s1 = nf * (nf - 1) * (nf - 1) * rowVar
	mo.s2 = nf * (nf - 1) * sq / float64(a*m)
	return mo
}
