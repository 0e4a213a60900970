package metrics

import "math"

// Permutation tests of large pools, drawn as counts of distinct signatures.
//
// Every statistic the permutation tests compare (RR, DI, TSS, AC) depends
// on a labelling only through how many runs of each class of runs fall in
// cell A, for a partition into classes fine enough that the statistic's
// pair values depend on the classes of the two runs alone: trace groups
// for RR, (tools, states, output) groups for DI, tool sequences for TSS,
// argument sequences for AC. Runs whose group is a singleton in every kind
// an agreement uses contribute nothing to it and share one implicit class.
// A uniform relabelling moves counts drawn from the multivariate
// hypergeometric distribution, which sequential hypergeometric draws give
// exactly, so a replicate costs O(D) (O(D²) for TSS and AC) instead of
// O(N): the same permutation test, with its Monte Carlo error.

// countPerm draws relabellings as class counts.
type countPerm struct {
	size []int64 // pool runs of each class; the implicit class takes the rest
	n, m int64   // pool size and cell A's size
	x    []int64 // after next: runs of each class in cell A
	r    rng
}

func newCountPerm(size []int64, n, m int64, r rng) *countPerm {
	return &countPerm{size: size, n: n, m: m, x: make([]int64, len(size)), r: r}
}

// next draws the class counts of cell A of a uniform relabelling.
func (c *countPerm) next() {
	left, slots := c.n, c.m
	for i, k := range c.size {
		x := c.r.hypergeometric(left, k, slots)
		c.x[i] = x
		left -= k
		slots -= x
	}
}

// countStat returns a statistic on cell A and on cell B for the class
// counts x of cell A.
type countStat func(x []int64) (a, b Value)

// countTest runs B relabellings: the observed Δ from the observed counts
// and p = (1 + #{|Δ*| ≥ |Δ|}) / (B' + 1) with its Monte Carlo SE, B' the
// replicates with the statistic defined on both sides. ok is false when
// the statistic is undefined on an observed side.
func countTest(c *countPerm, obsX []int64, stat countStat, b int) (obs float64, p, se Value, valid int, ok bool) {
	sa, sb := stat(obsX)
	if !sa.Valid || !sb.Valid {
		return 0, Null, Null, 0, false
	}
	obs = sb.V - sa.V
	extreme := 0
	for rep := 0; rep < b; rep++ {
		c.next()
		pa, pb := stat(c.x)
		if !pa.Valid || !pb.Valid {
			continue
		}
		valid++
		if atLeastAsExtreme(pb.V-pa.V, obs) {
			extreme++
		}
	}
	p, se = monteCarloP(extreme, valid)
	return obs, p, se, valid, true
}

// monteCarloP is p = (1 + extreme)/(valid + 1) and its Monte Carlo SE,
// √(p(1 − p)/valid) (null when no replicate was valid).
func monteCarloP(extreme, valid int) (p, se Value) {
	pv := float64(1+extreme) / float64(valid+1)
	if valid == 0 {
		return Some(pv), Null
	}
	return Some(pv), Some(math.Sqrt(pv * (1 - pv) / float64(valid)))
}

// classesOf numbers the classes of the runs [0, n) given each run's class
// key (−1: the implicit class) and returns the class of each run (−1 for
// the implicit class) and the pool size of each class.
func classesOf(n int, key func(i int) int64) (class []int32, size []int64) {
	class = make([]int32, n)
	var t keyTable
	t.reset(0)
	for i := 0; i < n; i++ {
		k := key(i)
		if k < 0 {
			class[i] = -1
			continue
		}
		id, inserted := t.id(key128{mix64(uint64(k)), uint64(k)})
		if inserted {
			size = append(size, 0)
		}
		class[i] = id
		size[id]++
	}
	return class, size
}

// countsIn returns the number of runs of each class among the runs [lo, hi).
func countsIn(class []int32, d, lo, hi int) []int64 {
	x := make([]int64, d)
	for _, c := range class[lo:hi] {
		if c >= 0 {
			x[c]++
		}
	}
	return x
}

// mix64 is SplitMix64's finaliser: keyTable probes on the key's first
// half, which must therefore look random.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// agreementCountStat is an agreement over groups with the given pool
// sizes: Σ x(x−1)/(m(m−1)) in cell A, the same of the rest in cell B.
func agreementCountStat(size []int64, m, n int64) countStat {
	return func(x []int64) (Value, Value) {
		var pa, pb int64
		for i, c := range x {
			o := size[i] - c
			pa += c * (c - 1)
			pb += o * (o - 1)
		}
		return Some(float64(pa) / float64(m*(m-1))), Some(float64(pb) / float64((n-m)*(n-m-1)))
	}
}

// diCountStat is DI over joint (tools, states, output) classes: group[k][c]
// is the group (numbered 0 … len(groupSize[k])−1, or −1 for a singleton)
// of class c in kind k.
func diCountStat(group [3][]int32, groupSize [3][]int64, m, n int64) countStat {
	var acc [3][]int64
	for k := range acc {
		acc[k] = make([]int64, len(groupSize[k]))
	}
	return func(x []int64) (Value, Value) {
		var pa, pb int64
		for k := range acc {
			clear(acc[k])
			for c, g := range group[k] {
				if g >= 0 {
					acc[k][g] += x[c]
				}
			}
			for g, c := range acc[k] {
				o := groupSize[k][g] - c
				pa += c * (c - 1)
				pb += o * (o - 1)
			}
		}
		return Some(float64(pa) / float64(3*m*(m-1))), Some(float64(pb) / float64(3*(n-m)*(n-m-1)))
	}
}

// pairCountStat is a pairwise ratio Σ num / Σ den over the ordered pairs of
// distinct runs of each cell, for class counts and the d×d matrices of
// pairForm (den nil: den ≡ 1). One quadratic form per replicate: cell B's
// sums follow from cell A's and the pool's.
func pairCountStat(f pairForm, size []int64, m, n int64) countStat {
	d := f.d
	type sums struct {
		row  []float64 // Σ_h size_h M[g][h]
		all  float64   // Σ_g Σ_h size_g size_h M[g][h] − Σ_g size_g M[g][g]
		diag []float64
	}
	prep := func(mat []float64) sums {
		s := sums{row: make([]float64, d), diag: make([]float64, d)}
		for g := 0; g < d; g++ {
			for h := 0; h < d; h++ {
				s.row[g] += float64(size[h]) * mat[g*d+h]
			}
			s.diag[g] = mat[g*d+g]
			s.all += float64(size[g]) * (s.row[g] - s.diag[g])
		}
		return s
	}
	// side returns Σ over ordered pairs of distinct runs of cell A and of
	// cell B: with y = size − x, Σ y y M − Σ y M_gg = all − 2 Σ x row +
	// Σ x x M + Σ x M_gg, where all already removed the pool's diagonal.
	side := func(mat []float64, s sums, x []int64) (a, b float64) {
		var quad, lin, diag float64
		for g := 0; g < d; g++ {
			xg := float64(x[g])
			if xg == 0 {
				continue
			}
			r := mat[g*d:]
			var q float64
			for h := 0; h < d; h++ {
				q += float64(x[h]) * r[h]
			}
			quad += xg * q
			lin += xg * s.row[g]
			diag += xg * s.diag[g]
		}
		return quad - diag, s.all - 2*lin + quad + diag
	}
	ns := prep(f.num)
	var ds sums
	if f.den != nil {
		ds = prep(f.den)
	}
	return func(x []int64) (Value, Value) {
		na, nb := side(f.num, ns, x)
		da, db := float64(m*(m-1)), float64((n-m)*(n-m-1))
		if f.den != nil {
			da, db = side(f.den, ds, x)
		}
		va, vb := Null, Null
		if da > 0 {
			va = Some(na / da)
		}
		if db > 0 {
			vb = Some(nb / db)
		}
		return va, vb
	}
}
