package analysis

import (
	"fmt"

	"github.com/dittolab/ditto/metrics"
)

// Pair names two conditions compared within every (task, model) of a study: condition B
// against the reference condition A. B = AnyCondition means every other condition.
type Pair struct {
	A string `json:"a"`
	B string `json:"b"`
}

// AnyCondition as Pair.B compares every condition but A with A.
const AnyCondition = "*"

// DefaultPairs are the spec's comparisons of a harness study: each condition against
// baseline, and harness_sp against harness.
var DefaultPairs = []Pair{{A: "baseline", B: AnyCondition}, {A: "harness", B: "harness_sp"}}

// Pair rules recorded in Settings.PairRule.
const (
	// RulePairs compares the conditions named by Settings.Pairs.
	RulePairs = "pairs"
	// RuleConsecutiveReleases compares each release of a production study with the release
	// before it, releases ordered by their first counted run's start (then by name). It is the
	// default for production studies, whose conditions are releases and have no baseline.
	RuleConsecutiveReleases = "consecutive_releases"
)

// Options configure Compute and CompareWindows. The zero value gives the spec's defaults.
type Options struct {
	// Permutations is B of the permutation tests; 0 means metrics.DefaultPermutations (10,000).
	Permutations int
	// Seed seeds every random choice (permutations, sampled pairs): equal seeds and equal events
	// give identical reports. Each comparison derives its own stream from Seed and its cells'
	// names, so that comparisons do not share their Monte Carlo error.
	Seed uint64
	// Pairs lists the comparisons made within each (task, model). nil means DefaultPairs for a
	// harness study and RuleConsecutiveReleases for a production study; an empty non-nil slice
	// means no comparisons.
	Pairs []Pair
	// Cell tunes the per-cell computation (exact-versus-sampled threshold, sampled pairs,
	// pass^k); its Seed is replaced by Seed.
	Cell metrics.Options
}

// Validate reports options out of range.
func (o Options) Validate() error {
	if o.Permutations < 0 {
		return fmt.Errorf("%w: permutations %d < 0", ErrInvalidOptions, o.Permutations)
	}
	for _, p := range o.Pairs {
		if p.A == "" || p.B == "" || p.A == AnyCondition || p.A == p.B {
			return fmt.Errorf("%w: pair %q vs %q (want two different conditions; only B may be %q)", ErrInvalidOptions, p.B, p.A, AnyCondition)
		}
	}
	if err := o.Cell.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Permutations == 0 {
		o.Permutations = metrics.DefaultPermutations
	}
	o.Cell.Seed = o.Seed
	return o
}

func (o Options) compareConfig(cellA, cellB string) metrics.CompareConfig {
	return metrics.CompareConfig{
		CellA:        cellA,
		CellB:        cellB,
		Permutations: o.Permutations,
		Seed:         deriveSeed(o.Seed, cellA+"\x00"+cellB),
		Cell:         o.Cell,
	}
}

// deriveSeed mixes a label into a seed (FNV-1a, then SplitMix64's finalizer): a fixed function,
// so reports stay reproducible.
func deriveSeed(seed uint64, label string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(label); i++ {
		h ^= uint64(label[i])
		h *= 1099511628211
	}
	z := seed ^ h
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
