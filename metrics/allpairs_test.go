package metrics

import (
	"math"
	"testing"
)

// allPairs is the straightforward reference: every metric by looping over
// all ordered pairs of runs, comparing framed bytes directly (no hashing,
// no grouping). It sums the same exact rationals as the grouped code, so
// point estimates must agree bit for bit; SEs agree to rounding.
type allPairsResult struct {
	rr, di, tools, states, output, plan, tss, ac Estimate
	divergence                                   []Value
}

func allPairs(runs []Run) allPairsResult {
	n := len(runs)
	nf := float64(n)
	var res allPairsResult
	framed := func(f func(r Run) []byte) []string {
		out := make([]string, n)
		for i, r := range runs {
			out[i] = string(f(r))
		}
		return out
	}
	agree := func(vals []string) (Estimate, []int64, int64) {
		rows := make([]int64, n)
		var p int64
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j && vals[i] == vals[j] {
					rows[i]++
					p++
				}
			}
		}
		e := Estimate{Value: Some(float64(p) / (nf * (nf - 1)))}
		e.SE = jackknifeRuns(n, func(r int) float64 {
			return (float64(p) - 2*float64(rows[r])) / ((nf - 1) * (nf - 2))
		})
		return e, rows, p
	}
	trace := framed(func(r Run) []byte {
		b := appendString(nil, r.Plan)
		b = appendStrings(b, r.States)
		b = appendCalls(b, r.Calls)
		return appendString(b, r.Output)
	})
	res.rr, _, _ = agree(trace)
	res.plan, _, _ = agree(framed(func(r Run) []byte { return appendString(nil, r.Plan) }))
	var rows [3][]int64
	var ps [3]int64
	res.tools, rows[0], ps[0] = agree(framed(func(r Run) []byte { return appendStrings(nil, r.Tools) }))
	res.states, rows[1], ps[1] = agree(framed(func(r Run) []byte { return appendStrings(nil, r.States) }))
	res.output, rows[2], ps[2] = agree(framed(func(r Run) []byte { return appendString(nil, r.Output) }))
	var di float64
	for i := range ps {
		di += float64(ps[i]) / (nf * (nf - 1))
	}
	res.di = Estimate{Value: Some(di / 3)}
	res.di.SE = jackknifeRuns(n, func(r int) float64 {
		var s float64
		for i := range ps {
			s += float64(ps[i]) - 2*float64(rows[i][r])
		}
		return s / (3 * (nf - 1) * (nf - 2))
	})

	// TSS.
	var fs fracSum
	row := make([]float64, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			a, b := runs[i].Tools, runs[j].Tools
			m := max(len(a), len(b))
			d := Levenshtein(a, b)
			fs.add(m-d, m, 1)
			row[i] += SequenceSimilarity(a, b)
		}
	}
	num := fs.value()
	res.tss = Estimate{Value: Some(num / (nf * (nf - 1)))}
	res.tss.SE = jackknifeRuns(n, func(r int) float64 { return (num - 2*row[r]) / ((nf - 1) * (nf - 2)) })

	// AC.
	var p leafParser
	leaves := make([][][]uint64, n)
	for i, r := range runs {
		for _, c := range r.Calls {
			leaves[i] = append(leaves[i], p.leafSet(c.Args, nil))
		}
	}
	fs = fracSum{}
	numRow := make([]float64, n)
	denRow := make([]float64, n)
	var den int64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			k := min(len(leaves[i]), len(leaves[j]))
			for t := 0; t < k; t++ {
				inter, union := jaccardCounts(leaves[i][t], leaves[j][t])
				fs.add(inter, union, 1)
				if union == 0 {
					numRow[i]++
				} else {
					numRow[i] += float64(inter) / float64(union)
				}
			}
			den += int64(k)
			denRow[i] += float64(k)
		}
	}
	if den > 0 {
		num := fs.value()
		res.ac = Estimate{Value: Some(num / float64(den))}
		res.ac.SE = jackknifeRuns(n, func(r int) float64 {
			return (num - 2*numRow[r]) / (float64(den) - 2*denRow[r])
		})
	}

	// Divergence: first step at which each pair differs.
	maxLen := 0
	for _, r := range runs {
		maxLen = max(maxLen, len(r.Calls))
	}
	firstDiff := make([]int64, maxLen+1) // index maxLen: never differ
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			a, b := runs[i].Calls, runs[j].Calls
			k := 0
			for k < maxLen {
				ha, hb := k < len(a), k < len(b)
				if ha != hb || (ha && a[k] != b[k]) {
					break
				}
				k++
			}
			firstDiff[k]++
		}
	}
	var differ int64
	for k := 0; k < maxLen; k++ {
		differ += firstDiff[k]
		total := int64(n) * int64(n-1)
		res.divergence = append(res.divergence, Some(1-float64(total-differ)/float64(total)))
	}
	return res
}

// jackknifeRuns is the textbook jackknife over per-run leave-one-out values.
func jackknifeRuns(n int, loo func(r int) float64) Value {
	if n < 3 {
		return Null
	}
	var mean float64
	for r := 0; r < n; r++ {
		mean += loo(r)
	}
	mean /= float64(n)
	var ss float64
	for r := 0; r < n; r++ {
		d := loo(r) - mean
		ss += d * d
	}
	return Some(math.Sqrt(float64(n-1) / float64(n) * ss))
}

func sameValue(a, b Value) bool { return a.Valid == b.Valid && a.V == b.V }

func nearValue(a, b Value, rel float64) bool {
	if a.Valid != b.Valid {
		return false
	}
	// An absolute floor of 1e-12 absorbs rounding around zero (an SE that
	// is 0 in one summation order and 1e-16 in another).
	return !a.Valid || math.Abs(a.V-b.V) <= rel*math.Abs(b.V)+1e-12
}

func TestComputeCellMatchesAllPairs(t *testing.T) {
	sizes := []int{0, 1, 2, 3, 17, 300}
	if !testing.Short() {
		sizes = append(sizes, 2000)
	}
	for _, s := range []shape{shapeFew, shapeDistinct, shapeAdversarial} {
		for _, n := range sizes {
			if n > 1000 && s == shapeAdversarial {
				continue // the slowest reference; N = 300 covers its paths
			}
			runs := genRuns(n, s, uint64(n)+7)
			got, err := ComputeCell(runs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if n < 2 {
				if got.RR.Value.Valid || got.TSS.Value.Valid || got.AC.Value.Valid || got.Divergence != nil {
					t.Errorf("%v N=%d: pairwise metrics defined: %+v", s, n, got)
				}
				continue
			}
			want := allPairs(runs)
			check := func(name string, g, w Estimate) {
				t.Helper()
				if g.Estimated {
					t.Errorf("%v N=%d %s: sampled, want exact", s, n, name)
				}
				if !sameValue(g.Value, w.Value) {
					t.Errorf("%v N=%d %s = %v, all-pairs %v (must be identical)", s, n, name, g.Value, w.Value)
				}
				if !nearValue(g.SE, w.SE, 1e-9) {
					t.Errorf("%v N=%d %s SE = %v, all-pairs %v", s, n, name, g.SE, w.SE)
				}
			}
			check("RR", got.RR, want.rr)
			check("DI", got.DI, want.di)
			check("tools", got.ToolsAgree, want.tools)
			check("states", got.StatesAgree, want.states)
			check("output", got.OutputAgree, want.output)
			check("plan", got.PlanAgree, want.plan)
			check("TSS", got.TSS, want.tss)
			check("AC", got.AC, want.ac)
			if len(got.Divergence) != len(want.divergence) {
				t.Fatalf("%v N=%d divergence has %d steps, all-pairs %d", s, n, len(got.Divergence), len(want.divergence))
			}
			for k := range got.Divergence {
				if !sameValue(got.Divergence[k], want.divergence[k]) {
					t.Errorf("%v N=%d divergence[%d] = %v, all-pairs %v", s, n, k, got.Divergence[k], want.divergence[k])
				}
			}
		}
	}
}
