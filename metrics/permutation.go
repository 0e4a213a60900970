package metrics

import (
	"fmt"
	"math"
)

// DefaultPermutations is the default number of permutations B.
const DefaultPermutations = 10000

// permTolerance: a permuted |Δ*| counts as at least as extreme as the
// observed |Δ| when |Δ*| ≥ |Δ|·(1 − permTolerance) − permTolerance, so that
// rounding differences between mathematically equal statistics (e.g. the
// same groups summed in another order) do not decide the p-value.
const permTolerance = 1e-9

func atLeastAsExtreme(d, obs float64) bool {
	return math.Abs(d) >= math.Abs(obs)*(1-permTolerance)-permTolerance
}

// permTally counts the relabellings of a permutation test of RR, DI, TSS and AC at once, per
// quantity: valid those with the statistic defined on both sides, extreme those among them
// whose Δ* is at least as extreme as the observed Δ (obs). A quantity that is not live (its
// statistic undefined on an observed cell) is never counted and gets no p-value.
type permTally struct {
	obs            [numPermQ]float64
	live           [numPermQ]bool
	extreme, valid [numPermQ]int
}

// add counts one relabelling, given each quantity's statistic on side A and on side B.
func (t *permTally) add(a, b [numPermQ]Value) {
	for q := range t.live {
		if !t.live[q] || !a[q].Valid || !b[q].Valid {
			continue
		}
		t.valid[q]++
		if atLeastAsExtreme(b[q].V-a[q].V, t.obs[q]) {
			t.extreme[q]++
		}
	}
}

// finish writes each live quantity's p-value, its Monte Carlo SE and note(valid) into out,
// indexed like the quantities.
func (t *permTally) finish(out []Comparison, note func(valid int) string) {
	for q := range out {
		if t.live[q] {
			out[q].P, out[q].PSE = monteCarloP(t.extreme[q], t.valid[q])
			out[q].Note = note(t.valid[q])
		}
	}
}

// PermutationTest tests whether stat differs between two cells by
// permuting condition labels: pool both cells' runs, assign len(a) of them
// at random to the first cell B times (a partial Fisher–Yates shuffle drawn
// from the package's seeded generator, so a seed reproduces the test),
// and return the observed Δ = stat(b) − stat(a) with p = (1 + #{|Δ*| ≥ |Δ|})
// / (B' + 1), where B' counts the permutations whose statistic is defined.
// delta and p are Null when stat is undefined on either observed cell.
//
// stat is called 2B + 2 times on slices of a private copy of the runs and
// must not retain them; its cost per call is the cost per replicate (for
// the metrics of this package, linear in the runs plus the D² work over
// distinct sequences, never a loop over run pairs). Compare uses a faster
// path that groups the pooled runs once.
func PermutationTest(a, b []Run, stat func([]Run) Value, B int, seed uint64) (delta, p Value, err error) {
	if len(a) == 0 || len(b) == 0 {
		return Null, Null, fmt.Errorf("%w: PermutationTest: cells of %d and %d runs", ErrEmpty, len(a), len(b))
	}
	if B < 1 {
		return Null, Null, fmt.Errorf("%w: PermutationTest: B = %d < 1", ErrInvalidArgument, B)
	}
	sa, sb := stat(a), stat(b)
	if !sa.Valid || !sb.Valid {
		return Null, Null, nil
	}
	obs := sb.V - sa.V
	pool := make([]Run, 0, len(a)+len(b))
	pool = append(append(pool, a...), b...)
	perm := newPermuter(len(pool), len(a), seed)
	buf := make([]Run, len(pool))
	extreme, valid := 0, 0
	for rep := 0; rep < B; rep++ {
		perm.next()
		for i, j := range perm.idx {
			buf[i] = pool[j]
		}
		va, vb := stat(buf[:len(a)]), stat(buf[len(a):])
		if !va.Valid || !vb.Valid {
			continue
		}
		valid++
		if atLeastAsExtreme(vb.V-va.V, obs) {
			extreme++
		}
	}
	return Some(obs), Some(float64(1+extreme) / float64(valid+1)), nil
}

// permuter draws the label assignments: after next, idx[:na] are the runs
// assigned to the first cell, a uniform random subset.
type permuter struct {
	idx []int32
	na  int
	r   rng
}

func newPermuter(n, na int, seed uint64) *permuter {
	p := &permuter{idx: make([]int32, n), na: na, r: newRNG(seed, streamPermutation)}
	for i := range p.idx {
		p.idx[i] = int32(i)
	}
	return p
}

// next performs a partial Fisher–Yates shuffle of the first na positions.
// Starting from any arrangement, this leaves a uniformly random subset in
// front, so the shuffle never needs resetting.
func (p *permuter) next() {
	n := uint64(len(p.idx))
	for i := 0; i < p.na; i++ {
		j := i + int(p.r.below(n-uint64(i)))
		p.idx[i], p.idx[j] = p.idx[j], p.idx[i]
	}
}
