package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// runSetting is what pairing sees of a run: its cell, its input and seed index, and everything
// its condition sets — the harness components, the context tier and the budget. Two runs of a
// model are a pair for a factor when their settings are equal but for that factor.
type runSetting struct {
	CellKey
	input, seed int64
	components  []string // sorted, as run.started recorded them
	tier        string   // "" when the context is not managed
	budget      int64
}

// Factors a comparison can switch besides a harness component (whose name is its factor).
const (
	factorTier   = "tier"
	factorBudget = "budget"
)

// pairKey is a run's setting without its condition's name and without factor: the runs
// of a comparison that share it differ in factor alone.
type pairKey struct {
	model, task string
	input, seed int64
	components  string // the components but factor, joined by "+"
	tier        string
	budget      int64
}

func (s runSetting) pairKey(factor string) pairKey {
	k := pairKey{model: s.Model, task: s.Task, input: s.input, seed: s.seed, tier: s.tier, budget: s.budget}
	switch factor {
	case factorTier:
		k.tier = ""
	case factorBudget:
		k.budget = 0
	}
	k.components = strings.Join(slices.DeleteFunc(slices.Clone(s.components), func(c string) bool { return c == factor }), "+")
	return k
}

func (k pairKey) compare(o pairKey) int {
	return cmp.Or(cmp.Compare(k.model, o.model), cmp.Compare(k.task, o.task), cmp.Compare(k.input, o.input),
		cmp.Compare(k.seed, o.seed), cmp.Compare(k.components, o.components), cmp.Compare(k.tier, o.tier),
		cmp.Compare(k.budget, o.budget))
}

// pairRuns pairs the runs of one comparison of factor: side gives a run's side (0 for A, 1 for
// B, -1 for a run outside the comparison); a run of A and a run of B are a pair when their
// settings agree in everything but factor. The pairs come in the order of their keys; runs
// without a partner are left out. Two runs of one side with the same key are an error: their
// conditions differ in nothing pairing sees, so which of them a run of the other side pairs
// with would be arbitrary.
func pairRuns[R any](runs []R, factor string, setting func(*R) *runSetting, side func(*R) int) ([][2]*R, error) {
	byKey := map[pairKey]*[2]*R{}
	for i := range runs {
		r := &runs[i]
		sd := side(r)
		if sd < 0 {
			continue
		}
		s := setting(r)
		k := s.pairKey(factor)
		p := byKey[k]
		if p == nil {
			p = &[2]*R{}
			byKey[k] = p
		}
		if p[sd] != nil {
			o := setting(p[sd])
			return nil, fmt.Errorf("%w: runs of conditions %q and %q (task %s, model %s, input %d, seed index %d) differ in nothing but their names, so neither can be paired on %s",
				ErrPairing, o.Condition, s.Condition, s.Task, s.Model, s.input, s.seed, factor)
		}
		p[sd] = r
	}
	keys := make([]pairKey, 0, len(byKey))
	for k, p := range byKey {
		if p[0] != nil && p[1] != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, pairKey.compare)
	out := make([][2]*R, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out, nil
}
