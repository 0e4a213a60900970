package analysis

import (
	"cmp"
	"errors"
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
// without a partner are left out. Two runs of one side with the key of a run of the other side
// are a *PairingError (ErrPairing): their conditions differ only in what pairing does not see
// (a context limit such as the recent window, a harness limit), so which of them that run pairs
// with would be arbitrary. The sections skip such a comparison and say why
// (SkippedComparison). Runs alike without a partner on the other side pair with nothing, and
// are no error.
func pairRuns[R any](runs []R, factor string, setting func(*R) *runSetting, side func(*R) int) ([][2]*R, error) {
	byKey := map[pairKey]*[2][]*R{}
	for i := range runs {
		r := &runs[i]
		sd := side(r)
		if sd < 0 {
			continue
		}
		k := setting(r).pairKey(factor)
		p := byKey[k]
		if p == nil {
			p = &[2][]*R{}
			byKey[k] = p
		}
		p[sd] = append(p[sd], r)
	}
	keys := make([]pairKey, 0, len(byKey))
	for k, p := range byKey {
		if len(p[0]) > 0 && len(p[1]) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, pairKey.compare)
	out := make([][2]*R, len(keys))
	for i, k := range keys {
		p := byKey[k]
		for _, rs := range p {
			if len(rs) > 1 {
				a, b := setting(rs[0]), setting(rs[1])
				return nil, &PairingError{Conditions: [2]string{a.Condition, b.Condition}, Task: a.Task, Model: a.Model, Input: a.input,
					Seed: a.seed, Factor: factor}
			}
		}
		out[i] = [2]*R{p[0][0], p[1][0]}
	}
	return out, nil
}

// PairingError is an ambiguous pairing: runs of two conditions on the same side of a comparison
// that pairing cannot tell apart. It wraps ErrPairing.
type PairingError struct {
	Conditions  [2]string
	Task, Model string
	Input, Seed int64
	Factor      string
}

func (e *PairingError) Error() string {
	return fmt.Sprintf("%v: %s", ErrPairing, e.Reason())
}

func (e *PairingError) Unwrap() error { return ErrPairing }

// Reason says why the comparison could not be made, for a reader of the report.
func (e *PairingError) Reason() string {
	return fmt.Sprintf("conditions %q and %q switch the same components at the same context tier and budget (task %s, input %d, seed index %d): "+
		"they differ only in settings pairing does not compare (context limits such as the recent window, harness limits), "+
		"so a run of the other side cannot be paired with one of them", e.Conditions[0], e.Conditions[1], e.Task, e.Input, e.Seed)
}

// SkippedComparison is a paired comparison a section could not make, with the reason; the
// report lists it under the section's comparisons.
type SkippedComparison struct {
	Model  string `json:"model"`
	Factor string `json:"factor"`
	A      string `json:"a"`
	B      string `json:"b"`
	Scope  string `json:"scope,omitempty"`
	Reason string `json:"reason"`
}

// skipped returns the SkippedComparison of an ambiguous pairing, and false for any other error.
func skipped(err error, model, factor, a, b, scope string) (SkippedComparison, bool) {
	var pe *PairingError
	if !errors.As(err, &pe) {
		return SkippedComparison{}, false
	}
	return SkippedComparison{Model: model, Factor: factor, A: a, B: b, Scope: scope, Reason: pe.Reason()}, true
}
