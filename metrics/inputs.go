package metrics

import (
	"math"
	"slices"
)

// InputGroups says what a cell's pairwise metrics stand on when they are taken within input
// groups (ComputeCellByInput): production runs of one task, model and release process
// different inputs, and only runs of the same input are repeats of each other.
type InputGroups struct {
	// Groups counts the input groups of 2 runs or more: the pairwise metrics are pooled over
	// their run pairs. GroupedRuns counts the runs in them.
	Groups      int `json:"groups"`
	GroupedRuns int `json:"grouped_runs"`
	// SingleRuns counts the runs whose input no other run of the cell shares (a run without an
	// input key is one of them): counted in N, success, tokens and latency, never paired.
	SingleRuns int `json:"single_runs"`
}

// ComputeCellByInput computes a cell's metrics with the pairwise ones (RR, DI and its parts,
// plan agreement, TSS, AC and the divergence profile) taken within input groups — runs
// sharing Run.InputKey; a run with an empty key is a group of its own — and pooled over the
// groups of 2 runs or more, each run pair counting once:
//
//	A(sig) = Σ_g Σ_k n_gk (n_gk − 1) / Σ_g n_g (n_g − 1)
//
// TSS is pooled the same way (each group's mean weighted by its n_g (n_g − 1) pairs), AC by
// each group's count of aligned (step, pair) values, Σ_{i<j} min(|calls_i|, |calls_j|). The
// standard error is the jackknife over the groups (leave one input group out), null with
// fewer than 2 groups. With no group of 2 runs the pairwise metrics are null. Success,
// pass^k, tokens, latency, harness activity and the distinct counts are those of every run of
// the cell, as ComputeCell gives them. Errors are ComputeCell's.
func ComputeCellByInput(runs []Run, opt Options) (CellMetrics, error) {
	m, err := ComputeCell(runs, opt)
	if err != nil {
		return m, err
	}
	groups := inputGroups(runs)
	ig := &InputGroups{}
	var parts []groupPart
	for _, g := range groups {
		if len(g) < 2 {
			ig.SingleRuns += len(g)
			continue
		}
		gm, err := ComputeCell(g, opt)
		if err != nil {
			return m, err
		}
		ig.Groups++
		ig.GroupedRuns += len(g)
		n := float64(len(g))
		parts = append(parts, groupPart{m: gm, pairs: n * (n - 1) / 2, aligned: alignedPairs(g)})
	}
	m.InputGroups = ig
	pairs := func(p groupPart) float64 { return p.pairs }
	m.RR = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.RR })
	m.ToolsAgree = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.ToolsAgree })
	m.StatesAgree = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.StatesAgree })
	m.OutputAgree = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.OutputAgree })
	m.PlanAgree = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.PlanAgree })
	m.DI = poolMean(parts, pairs, func(c *CellMetrics) Estimate { return c.ToolsAgree },
		func(c *CellMetrics) Estimate { return c.StatesAgree }, func(c *CellMetrics) Estimate { return c.OutputAgree })
	m.TSS = pool(parts, pairs, func(c *CellMetrics) Estimate { return c.TSS })
	m.AC = pool(parts, func(p groupPart) float64 { return p.aligned }, func(c *CellMetrics) Estimate { return c.AC })
	m.Divergence = poolDivergence(parts)
	return m, nil
}

// groupPart is one input group of 2 runs or more: its metrics and its weights.
type groupPart struct {
	m CellMetrics
	// pairs is n (n − 1) / 2; aligned the group's (step, pair) values of AC.
	pairs, aligned float64
}

// inputGroups partitions runs by InputKey, in the order keys first appear; a run without a
// key is a group of its own.
func inputGroups(runs []Run) [][]Run {
	var out [][]Run
	at := map[string]int{}
	for _, r := range runs {
		if r.InputKey == "" {
			out = append(out, []Run{r})
			continue
		}
		i, ok := at[r.InputKey]
		if !ok {
			i = len(out)
			at[r.InputKey] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// alignedPairs is Σ_{i<j} min(|calls_i|, |calls_j|): the number of (step, pair) values AC
// averages over. Sorted lengths make it O(n log n): the i-th shortest is the minimum of its
// pairs with every longer one.
func alignedPairs(runs []Run) float64 {
	ls := make([]int, len(runs))
	for i := range runs {
		ls[i] = len(runs[i].Calls)
	}
	slices.Sort(ls)
	var s float64
	for i, l := range ls {
		s += float64(l) * float64(len(ls)-1-i)
	}
	return s
}

// pool is the weighted mean of the groups' values of one metric, w(g) each, groups whose
// value is null or weight 0 left out, with its leave-one-group-out jackknife SE.
func pool(parts []groupPart, w func(groupPart) float64, get func(*CellMetrics) Estimate) Estimate {
	return poolMean(parts, w, get)
}

// poolMean pools each of the metrics gets like pool and averages them (DI is the mean of its
// three pooled parts); the jackknife leaves a group out of every part at once.
func poolMean(parts []groupPart, w func(groupPart) float64, gets ...func(*CellMetrics) Estimate) Estimate {
	k := len(gets)
	sum := make([]float64, k)
	wsum := make([]float64, k)
	type contrib struct{ s, w []float64 }
	cs := make([]contrib, 0, len(parts))
	estimated := false
	for i := range parts {
		c := contrib{s: make([]float64, k), w: make([]float64, k)}
		used := false
		for j, get := range gets {
			e := get(&parts[i].m)
			wt := w(parts[i])
			if !e.Value.Valid || wt == 0 {
				continue
			}
			estimated = estimated || e.Estimated
			c.s[j], c.w[j] = wt*e.Value.V, wt
			sum[j] += c.s[j]
			wsum[j] += wt
			used = true
		}
		if used {
			cs = append(cs, c)
		}
	}
	value := func(drop *contrib) (float64, bool) {
		var v float64
		for j := range gets {
			s, ws := sum[j], wsum[j]
			if drop != nil {
				s, ws = s-drop.s[j], ws-drop.w[j]
			}
			if ws <= 0 {
				return 0, false
			}
			v += s / ws
		}
		return v / float64(k), true
	}
	v, ok := value(nil)
	if !ok {
		return Estimate{}
	}
	e := Estimate{Value: Some(v), Estimated: estimated}
	g := len(cs)
	if g < 2 {
		return e
	}
	loo := make([]float64, g)
	var mean float64
	for i := range cs {
		x, ok := value(&cs[i])
		if !ok {
			return e
		}
		loo[i] = x
		mean += x
	}
	mean /= float64(g)
	var ss float64
	for _, x := range loo {
		ss += (x - mean) * (x - mean)
	}
	e.SE = Some(math.Sqrt(float64(g-1) / float64(g) * ss))
	return e
}

// poolDivergence pools the groups' divergence profiles step by step, each weighted by its run
// pairs; a group's profile stays at its last value beyond its longest call sequence (pairs
// that differed by then still do). Nil without a group of 2 runs.
func poolDivergence(parts []groupPart) []Value {
	steps := 0
	for _, p := range parts {
		steps = max(steps, len(p.m.Divergence))
	}
	if steps == 0 {
		return nil
	}
	out := make([]Value, steps)
	for k := range out {
		var s, w float64
		for _, p := range parts {
			d := p.m.Divergence
			if len(d) == 0 {
				continue
			}
			v := d[min(k, len(d)-1)]
			if !v.Valid {
				continue
			}
			s += p.pairs * v.V
			w += p.pairs
		}
		if w > 0 {
			out[k] = Some(s / w)
		}
	}
	return out
}
