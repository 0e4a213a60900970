package metrics

import (
	"fmt"
	"math"
)

// Defaults for Options.
const (
	DefaultMaxExactDistinct = 2000
	DefaultSamplePairs      = 1 << 18
	DefaultMaxSubsetWork    = 1 << 25
)

// DefaultPassK are the k of pass^k reported (those ≤ N).
var DefaultPassK = []int{1, 2, 4, 8}

// Options tune ComputeCell. The zero value gives the defaults.
type Options struct {
	// MaxExactDistinct bounds the exact computation of TSS and AC: TSS is
	// exact while the cell has at most this many distinct tool sequences,
	// AC while it has at most this many distinct argument sequences;
	// beyond, both are estimated from SamplePairs sampled run pairs.
	// 0 means DefaultMaxExactDistinct.
	MaxExactDistinct int
	// SamplePairs is the number of run pairs sampled for an estimate.
	// 0 means DefaultSamplePairs.
	SamplePairs int
	// MaxSubsetWork lets AC stay exact beyond MaxExactDistinct when the
	// arguments have few leaves: the exact computation counting shared
	// leaf subsets (acsubsets.go) is attempted while its work stays within
	// this many table operations (about 10 ns each), and the sample is used
	// otherwise. 0 means DefaultMaxSubsetWork; negative disables it.
	MaxSubsetWork int
	// Seed seeds the pair sample; equal seeds and equal runs (in the same
	// order) give identical estimates.
	Seed uint64
	// PassK lists the k of pass^k; nil means DefaultPassK. Values above N
	// are skipped.
	PassK []int
}

// Validate reports options out of range.
func (o Options) Validate() error {
	if o.MaxExactDistinct < 0 || o.SamplePairs < 0 {
		return fmt.Errorf("%w: MaxExactDistinct %d and SamplePairs %d must be ≥ 0", ErrInvalidOptions, o.MaxExactDistinct, o.SamplePairs)
	}
	for _, k := range o.PassK {
		if k < 1 {
			return fmt.Errorf("%w: PassK contains %d < 1", ErrInvalidOptions, k)
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxExactDistinct == 0 {
		o.MaxExactDistinct = DefaultMaxExactDistinct
	}
	if o.SamplePairs == 0 {
		o.SamplePairs = DefaultSamplePairs
	}
	if o.MaxSubsetWork == 0 {
		o.MaxSubsetWork = DefaultMaxSubsetWork
	}
	if o.PassK == nil {
		o.PassK = DefaultPassK
	}
	return o
}

// CellMetrics are the per-cell metrics of docs/metrics.md. Undefined values are
// null in JSON, never NaN.
type CellMetrics struct {
	N int `json:"n"`

	// RR is the Reproducibility Rate, A(sig_trace).
	RR Estimate `json:"rr"`
	// DI is the Determinism Index, the mean of its three parts.
	DI          Estimate `json:"di"`
	ToolsAgree  Estimate `json:"di_tools"`  // A(sig_tools)
	StatesAgree Estimate `json:"di_states"` // A(sig_states)
	OutputAgree Estimate `json:"di_output"` // A(sig_output): output agreement
	PlanAgree   Estimate `json:"plan_agreement"`

	// DistinctOutputs counts the distinct outputs; OutputModalShare is
	// max n_k / N.
	DistinctOutputs  int   `json:"distinct_outputs"`
	OutputModalShare Value `json:"output_modal_share"`
	// Distinct counts of the other signatures, for context.
	DistinctTraces    int `json:"distinct_traces"`
	DistinctPlans     int `json:"distinct_plans"`
	DistinctToolSeqs  int `json:"distinct_tool_sequences"`
	DistinctStateSeqs int `json:"distinct_state_sequences"`
	DistinctArgSeqs   int `json:"distinct_argument_sequences"`

	// TSS is the Tool Sequence Similarity; AC the Argument Consistency.
	TSS Estimate `json:"tss"`
	AC  Estimate `json:"ac"`

	Success Success  `json:"success"`
	PassK   []PassK  `json:"pass_k"`
	Tokens  Summary  `json:"tokens"`
	Latency Summary  `json:"latency_ms"`
	Harness Activity `json:"harness"`

	// Divergence[k] is the share of run pairs whose calls already differ at
	// or before step k (k from 0 to the longest call sequence − 1); null
	// for N < 2.
	Divergence []Value `json:"divergence"`

	// InputGroups is set when the pairwise metrics were taken within input
	// groups (ComputeCellByInput): how many groups and runs they stand on.
	InputGroups *InputGroups `json:"input_groups,omitempty"`
}

// Success is the success rate with its 95% Wilson interval.
type Success struct {
	Successes int   `json:"successes"`
	Rate      Value `json:"rate"`
	WilsonLow Value `json:"wilson_low"`
	WilsonHi  Value `json:"wilson_high"`
}

// PassK is pass^k = C(c, k)/C(N, k) for the cell's c successes in N runs.
type PassK struct {
	K     int     `json:"k"`
	Value float64 `json:"value"`
}

// Activity counts harness interventions, in total and per run.
type Activity struct {
	Retries                 int64 `json:"retries"`
	PlanReprompts           int64 `json:"plan_reprompts"`
	Escalations             int64 `json:"escalations"`
	RejectedToolCalls       int64 `json:"rejected_tool_calls"`
	RetriesPerRun           Value `json:"retries_per_run"`
	PlanRepromptsPerRun     Value `json:"plan_reprompts_per_run"`
	EscalationsPerRun       Value `json:"escalations_per_run"`
	RejectedToolCallsPerRun Value `json:"rejected_tool_calls_per_run"`
}

// ComputeCell computes every per-cell metric of docs/metrics.md over runs, all
// failed, escalated and aborted runs included. It does not modify runs.
// Nothing loops over run pairs: agreements and their jackknife SEs are
// O(N) over signature groups, TSS and AC are exact over distinct sequences
// (D² work) up to Options.MaxExactDistinct and sampled beyond. An empty
// cell gives N = 0 and nulls, not an error; errors report invalid options
// or runs with negative counts or non-finite latency.
func ComputeCell(runs []Run, opt Options) (CellMetrics, error) {
	if err := opt.Validate(); err != nil {
		return CellMetrics{}, err
	}
	opt = opt.withDefaults()
	for i := range runs {
		if err := runs[i].validate(i); err != nil {
			return CellMetrics{}, err
		}
	}
	var ix *index
	if len(runs) > 0 {
		ix = buildIndex(runs, cellIDs)
	}
	return cellFromIndex(runs, ix, opt), nil
}

// cellFromIndex is ComputeCell over valid runs already grouped (ix may be
// nil for an empty cell) with opt's defaults filled in.
func cellFromIndex(runs []Run, ix *index, opt Options) CellMetrics {
	n := len(runs)
	m := CellMetrics{N: n}
	m.Success, m.PassK = successOf(runs, opt.PassK)
	m.Tokens, m.Latency = summaries(runs)
	m.Harness = activityOf(runs)
	if n == 0 {
		return m
	}
	m.fillAgreements(ix)
	m.TSS = tssOf(runs, ix, opt)
	m.AC = acOf(runs, ix, opt)
	m.Divergence = divergence(runs, n, &ix.g[kCalls])
	return m
}

func (m *CellMetrics) fillAgreements(ix *index) {
	n := ix.n
	m.RR = AgreementEstimate(ix.g[kTrace].count)
	m.PlanAgree = AgreementEstimate(ix.g[kPlan].count)
	m.ToolsAgree = AgreementEstimate(ix.g[kTools].count)
	m.StatesAgree = AgreementEstimate(ix.g[kStates].count)
	m.OutputAgree = AgreementEstimate(ix.g[kOutput].count)
	m.DI = diEstimate(ix)
	m.DistinctTraces = ix.g[kTrace].distinct()
	m.DistinctPlans = ix.g[kPlan].distinct()
	m.DistinctToolSeqs = ix.g[kTools].distinct()
	m.DistinctStateSeqs = ix.g[kStates].distinct()
	m.DistinctOutputs = ix.g[kOutput].distinct()
	m.DistinctArgSeqs = ix.g[kArgs].distinct()
	var modal int64
	for _, c := range ix.g[kOutput].count {
		modal = max(modal, c)
	}
	m.OutputModalShare = Some(float64(modal) / float64(n))
}

// diEstimate computes DI and its jackknife SE. A run's leave-one-out DI
// depends on the sizes of its three groups, so one O(N) pass suffices.
func diEstimate(ix *index) Estimate {
	n := ix.n
	if n < 2 {
		return Estimate{}
	}
	parts := [3]*grouping{&ix.g[kTools], &ix.g[kStates], &ix.g[kOutput]}
	var p [3]int64
	var v float64
	for i, g := range parts {
		_, p[i], _ = agreementSums(g.count)
		v += float64(p[i]) / (float64(n) * float64(n-1))
	}
	e := Estimate{Value: Some(v / 3)}
	if n < 3 {
		return e
	}
	den := 3 * float64(n-1) * float64(n-2)
	loo := func(r int) float64 {
		var s float64
		for i, g := range parts {
			s += float64(p[i]) - 2*float64(g.count[g.id[r]]-1)
		}
		return s / den
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
	e.SE = Some(math.Sqrt(float64(n-1) / float64(n) * ss))
	return e
}

func tssOf(runs []Run, ix *index, opt Options) Estimate {
	g := &ix.g[kTools]
	seqs := internTools(pooled{a: runs}, g)
	if g.distinct() <= opt.MaxExactDistinct {
		return tssExact(ix.n, g, seqs)
	}
	return sampledRatio(ix.n, opt.SamplePairs, opt.Seed, streamTSS, tssPair(g, seqs))
}

func acOf(runs []Run, ix *index, opt Options) Estimate {
	g := &ix.g[kArgs]
	if g.distinct() <= opt.MaxExactDistinct {
		e, _ := acExact(pooled{a: runs}, ix.n, g, -1)
		return e
	}
	// Beyond the threshold, AC may still be exact and cheap by counting
	// shared leaf subsets when arguments have few leaves.
	if opt.MaxSubsetWork > 0 && g.distinct() <= opt.MaxSubsetWork/64 {
		if e, ok := acExact(pooled{a: runs}, ix.n, g, opt.MaxSubsetWork); ok {
			return e
		}
	}
	return sampledRatio(ix.n, opt.SamplePairs, opt.Seed, streamAC, acPair(runs))
}

func successOf(runs []Run, ks []int) (Success, []PassK) {
	var s Success
	for i := range runs {
		if runs[i].Success {
			s.Successes++
		}
	}
	n := len(runs)
	if n == 0 {
		return s, nil
	}
	s.Rate = Some(float64(s.Successes) / float64(n))
	lo, hi, err := Wilson(s.Successes, n, 0.95)
	if err == nil {
		s.WilsonLow, s.WilsonHi = Some(lo), Some(hi)
	}
	var pk []PassK
	for _, k := range ks {
		if k <= n {
			pk = append(pk, PassK{K: k, Value: passHatK1(s.Successes, n, k)})
		}
	}
	return s, pk
}

func summaries(runs []Run) (tokens, latency Summary) {
	t := make([]float64, len(runs))
	l := make([]float64, len(runs))
	for i := range runs {
		t[i] = float64(runs[i].Tokens)
		l[i] = runs[i].LatencyMS
	}
	return summarizeOwned(t), summarizeOwned(l)
}

func activityOf(runs []Run) Activity {
	var a Activity
	for i := range runs {
		r := &runs[i]
		a.Retries += int64(r.Retries)
		a.PlanReprompts += int64(r.PlanReprompts)
		a.RejectedToolCalls += int64(r.RejectedToolCalls)
		if r.Escalated {
			a.Escalations++
		}
	}
	if n := float64(len(runs)); n > 0 {
		a.RetriesPerRun = Some(float64(a.Retries) / n)
		a.PlanRepromptsPerRun = Some(float64(a.PlanReprompts) / n)
		a.EscalationsPerRun = Some(float64(a.Escalations) / n)
		a.RejectedToolCallsPerRun = Some(float64(a.RejectedToolCalls) / n)
	}
	return a
}
