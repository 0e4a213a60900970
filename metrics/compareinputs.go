package metrics

import (
	"fmt"
	"slices"
)

// streamInputs keeps the stratified permutations' draws apart from the other consumers'.
const streamInputs = 0x696e707574735f70 // "inputs_p"

// CompareByInput is Compare for production cells whose pairwise metrics are taken within
// input groups (ComputeCellByInput): success, tokens and latency are tested as Compare tests
// them (they are properties of each run), and RR, DI, TSS and AC, valued by
// ComputeCellByInput, by a permutation test stratified by input: each of the B relabellings
// shuffles the two cells' labels among the runs of one input key at a time, so every
// relabelled cell keeps its number of runs of each input, and the statistic is the
// difference of the within-group metrics. Runs whose input no other run of either cell
// shares make no pair and take no part. The work per relabelling is one pass over the run
// pairs within input groups (precomputed once), Σ_g n_g².
func CompareByInput(a, b []Run, cfg CompareConfig) ([]Comparison, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ma, err := ComputeCellByInput(a, cfg.Cell)
	if err != nil {
		return nil, fmt.Errorf("metrics: cell %q: %w", cfg.CellA, err)
	}
	mb, err := ComputeCellByInput(b, cfg.Cell)
	if err != nil {
		return nil, fmt.Errorf("metrics: cell %q: %w", cfg.CellB, err)
	}
	base := Comparison{CellA: cfg.CellA, CellB: cfg.CellB, NA: len(a), NB: len(b)}
	out := compareSuccess(a, b, ma, mb, base, new(keyTable))
	out = append(out, permuteByInput(a, b, ma, mb, base, cfg)...)
	out = append(out,
		compareMWU(QuantityTokens, a, b, ma.Tokens, mb.Tokens, func(r *Run) float64 { return float64(r.Tokens) }, base),
		compareMWU(QuantityLatency, a, b, ma.Latency, mb.Latency, func(r *Run) float64 { return r.LatencyMS }, base))
	return out, nil
}

// inputPair is one pair of runs of the same input: which of its signatures agree and its
// TSS and AC terms.
type inputPair struct {
	i, j                       int32 // indices into the pool
	trace, tools, states, outp bool
	tss                        float64
	acNum                      float64
	acDen                      int
}

// inputSums are the within-group sums of one side of a relabelling.
type inputSums struct {
	pairs, trace, di, tss, acNum float64
	acDen                        int
}

func (s inputSums) values() [numPermQ]Value {
	var v [numPermQ]Value
	if s.pairs > 0 {
		v[qRR] = Some(s.trace / s.pairs)
		v[qDI] = Some(s.di / (3 * s.pairs))
		v[qTSS] = Some(s.tss / s.pairs)
	}
	if s.acDen > 0 {
		v[qAC] = Some(s.acNum / float64(s.acDen))
	}
	return v
}

// inputPairs lists the pairs of runs of the pool that share a non-empty input key, and the
// keys' strata (pool indices of each key with 2 runs or more).
func inputPairs(pool []Run) ([]inputPair, [][]int32) {
	at := map[string]int{}
	var strata [][]int32
	for i, r := range pool {
		if r.InputKey == "" {
			continue
		}
		s, ok := at[r.InputKey]
		if !ok {
			s = len(strata)
			at[r.InputKey] = s
			strata = append(strata, nil)
		}
		strata[s] = append(strata[s], int32(i))
	}
	kept := strata[:0]
	for _, s := range strata {
		if len(s) >= 2 {
			kept = append(kept, s)
		}
	}
	trace := make([]string, len(pool))
	for i := range pool {
		r := &pool[i]
		trace[i] = string(appendString(appendCalls(appendStrings(appendString(nil, r.Plan), r.States), r.Calls), r.Output))
	}
	var lp leafParser
	leaves := make([][][]uint64, len(pool))
	var pairs []inputPair
	for _, s := range kept {
		for _, i := range s {
			for _, c := range pool[i].Calls {
				leaves[i] = append(leaves[i], lp.leafSet(c.Args, nil))
			}
		}
		for x, i := range s {
			for _, j := range s[x+1:] {
				ri, rj := &pool[i], &pool[j]
				p := inputPair{i: i, j: j, trace: trace[i] == trace[j], tools: equalStrings(ri.Tools, rj.Tools),
					states: equalStrings(ri.States, rj.States), outp: ri.Output == rj.Output, tss: SequenceSimilarity(ri.Tools, rj.Tools)}
				k := min(len(leaves[i]), len(leaves[j]))
				for t := 0; t < k; t++ {
					inter, union := jaccardCounts(leaves[i][t], leaves[j][t])
					if union == 0 {
						p.acNum++
					} else {
						p.acNum += float64(inter) / float64(union)
					}
				}
				p.acDen = k
				pairs = append(pairs, p)
			}
		}
	}
	return pairs, kept
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sums adds up each side's within-group pairs under a labelling (inB[i]: run i is B's).
func sums(pairs []inputPair, inB []bool) (sa, sb inputSums) {
	for _, p := range pairs {
		if inB[p.i] != inB[p.j] {
			continue
		}
		s := &sa
		if inB[p.i] {
			s = &sb
		}
		s.pairs++
		s.trace += b2f(p.trace)
		s.di += b2f(p.tools) + b2f(p.states) + b2f(p.outp)
		s.tss += p.tss
		s.acNum += p.acNum
		s.acDen += p.acDen
	}
	return sa, sb
}

func permuteByInput(a, b []Run, ma, mb CellMetrics, base Comparison, cfg CompareConfig) []Comparison {
	out := permComparisons(ma, mb, base)
	for q := range out {
		out[q].Method = MethodStratified
	}
	if len(a) == 0 || len(b) == 0 {
		return emptyCell(out)
	}
	pool := make([]Run, 0, len(a)+len(b))
	pool = append(append(pool, a...), b...)
	pairs, strata := inputPairs(pool)
	inB := make([]bool, len(pool))
	for i := len(a); i < len(pool); i++ {
		inB[i] = true
	}
	sa, sb := sums(pairs, inB)
	oa, ob := sa.values(), sb.values()
	var t permTally
	for q := range out {
		if !oa[q].Valid || !ob[q].Valid {
			out[q].Reason = fmt.Sprintf("%s is undefined within input groups in a cell (no input with 2 runs, or no aligned calls)", out[q].Quantity)
			continue
		}
		t.obs[q], t.live[q] = ob[q].V-oa[q].V, true
		out[q].Statistic = Some(t.obs[q])
	}
	if !slices.Contains(t.live[:], true) {
		return out
	}
	r := newRNG(cfg.Seed, streamInputs)
	for rep := 0; rep < cfg.Permutations; rep++ {
		// Shuffle the labels within each stratum (Fisher–Yates on its label slots).
		for _, s := range strata {
			for x := len(s) - 1; x > 0; x-- {
				y := int(r.below(uint64(x + 1)))
				inB[s[x]], inB[s[y]] = inB[s[y]], inB[s[x]]
			}
		}
		pa, pb := sums(pairs, inB)
		t.add(pa.values(), pb.values())
	}
	t.finish(out, func(valid int) string {
		return fmt.Sprintf("B = %d relabellings within %d input groups (%d with the statistic defined), seed %d",
			cfg.Permutations, len(strata), valid, cfg.Seed)
	})
	return out
}
