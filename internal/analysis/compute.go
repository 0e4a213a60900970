package analysis

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/dittolab/ditto/metrics"
)

// Compute computes the Result of a study from the database: every cell (task, model,
// condition) and every comparison of Options.Pairs within each (task, model), with the
// Benjamini–Hochberg adjustment across all of its comparisons. The statements run in one
// transaction, so the Result is of one snapshot even while ingestion continues. Errors
// wrap ErrNoStudy (unknown study), ErrNoRuns (no finished run), ErrInvalidOptions, or the
// database's.
func Compute(ctx context.Context, db *sql.DB, study string, opts Options) (*Result, error) {
	q, done, err := Snapshot(ctx, db)
	if err != nil {
		return nil, err
	}
	defer done()
	return ComputeFrom(ctx, q, study, opts)
}

// maxAttempts bounds the loads of ComputeFrom when data changes between its statements.
const maxAttempts = 3

// ComputeFrom is Compute over any Querier (the analyzer's HTTP API, say). A Querier without a
// snapshot across statements may see ingestion in between; the load is then retried (up to
// three times) before ErrChanged is returned.
func ComputeFrom(ctx context.Context, q Querier, study string, opts Options) (*Result, error) {
	if study == "" {
		return nil, fmt.Errorf("%w: empty study", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var err error
	for range maxAttempts {
		var r *Result
		r, err = computeOnce(ctx, q, study, opts)
		if !errors.Is(err, ErrChanged) {
			return r, err
		}
	}
	return nil, err
}

func computeOnce(ctx context.Context, q Querier, study string, opts Options) (*Result, error) {
	st, err := loadStudy(ctx, q, study)
	if err != nil {
		return nil, err
	}
	cells, err := loadCells(ctx, q, study)
	if err != nil {
		return nil, err
	}
	if err := loadCauses(ctx, q, study, cells); err != nil {
		return nil, err
	}
	var traces int64
	for _, c := range cells {
		traces += c.distinctTraces
	}
	runs, err := loadRuns(ctx, q, selection{study: study}, st.Paired, traces)
	if err != nil {
		return nil, err
	}
	var finished int64
	for _, c := range cells {
		if got := int64(len(runs[c.key])); got != c.data.CountedRuns {
			return nil, fmt.Errorf("%w: cell %s: %d counted runs, %d loaded", ErrChanged, c.key, c.data.CountedRuns, got)
		}
		// A study whose runs all errored has a result: null metrics and the causes.
		finished += c.data.CountedRuns + c.data.ErroredRuns + c.data.AbortedRuns + c.data.FoldErrors
	}
	if finished == 0 {
		var incomplete int64
		for _, c := range cells {
			incomplete += c.data.IncompleteRuns
		}
		return nil, fmt.Errorf("%w: study %q (%d cells, %d runs without a finished attempt)", ErrNoRuns, study, len(cells), incomplete)
	}

	rep := &Result{
		Study:       st.Study,
		GeneratedAt: timeText(st.lastEventUS),
		Settings:    settingsOf(opts),
		Cells:       make([]Cell, 0, len(cells)),
		Comparisons: []Comparison{},
		Notes:       []string{},
	}
	ms := make([]metrics.CellMetrics, len(cells))
	err = parallel(len(cells), func(i int) error {
		var err error
		if ms[i], err = cellMetrics(st.SourceKind, runs[cells[i].key], opts.Cell); err != nil {
			return fmt.Errorf("analysis: cell %s: %w", cells[i].key, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.SourceKind == SourceProduction {
		rep.Notes = append(rep.Notes, "production traffic: RR, DI, TSS, AC, plan agreement and the divergence profile are taken within input groups "+
			"(runs of the same input key, task, model and release) and pooled over the groups of 2 runs or more; "+
			"runs whose input no other run shares are counted (N, success, tokens, latency), not paired")
	}
	for i, c := range cells {
		rep.Cells = append(rep.Cells, Cell{CellKey: c.key, Data: c.data, Metrics: ms[i]})
		rep.Notes = append(rep.Notes, cellNotes(c, ms[i])...)
	}

	pairs, rule := resolvePairs(st.SourceKind, opts.Pairs, cells)
	rep.Settings.PairRule, rep.Settings.Pairs = rule, pairs
	type job struct {
		task, model, a, b string
	}
	var jobs []job
	for _, g := range groupCells(cells) {
		for _, p := range pairs {
			for _, b := range g.conditions {
				if p.matches(b) && slices.Contains(g.conditions, p.A) {
					jobs = append(jobs, job{g.task, g.model, p.A, b})
				}
			}
		}
	}
	// Each comparison has its own seed (derived from its cells' names), so running them
	// concurrently changes nothing in the result.
	results := make([][]metrics.Comparison, len(jobs))
	err = parallel(len(jobs), func(i int) error {
		j := jobs[i]
		ka, kb := CellKey{j.task, j.model, j.a}, CellKey{j.task, j.model, j.b}
		cs, err := compareCells(st.SourceKind, runs[ka], runs[kb], opts.compareConfig(ka.String(), kb.String()))
		if err != nil {
			return fmt.Errorf("analysis: compare %s with %s: %w", kb, ka, err)
		}
		results[i] = cs
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		for _, c := range results[i] {
			rep.Comparisons = append(rep.Comparisons, Comparison{Task: j.task, Model: j.model, ConditionA: j.a, ConditionB: j.b, Comparison: c})
		}
	}
	adjust(rep.Comparisons)
	return rep, nil
}

// cellMetrics computes a cell's metrics: those of production traffic within input groups
// (metrics.ComputeCellByInput: runs of different inputs are not repeats of each other), those
// of a harness cell over all its runs.
func cellMetrics(sourceKind string, runs []metrics.Run, o metrics.Options) (metrics.CellMetrics, error) {
	if sourceKind == SourceProduction {
		return metrics.ComputeCellByInput(runs, o)
	}
	return metrics.ComputeCell(runs, o)
}

// compareCells compares cell b with cell a as cellMetrics values them: production traffic
// by metrics.CompareByInput, harness cells by metrics.Compare.
func compareCells(sourceKind string, a, b []metrics.Run, cfg metrics.CompareConfig) ([]metrics.Comparison, error) {
	if sourceKind == SourceProduction {
		return metrics.CompareByInput(a, b, cfg)
	}
	return metrics.Compare(a, b, cfg)
}

// parallel runs f(0), …, f(n−1) on up to GOMAXPROCS goroutines and returns the error of the
// lowest index that failed (so the error, like the result, does not depend on scheduling).
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return firstErr(errs)
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// adjust applies metrics.AdjustBH across every comparison of a Result.
func adjust(cs []Comparison) {
	plain := make([]metrics.Comparison, len(cs))
	for i := range cs {
		plain[i] = cs[i].Comparison
	}
	metrics.AdjustBH(plain)
	for i := range cs {
		cs[i].Comparison = plain[i]
	}
}

func settingsOf(o Options) Settings {
	s := Settings{
		Permutations:     o.Permutations,
		Seed:             o.Seed,
		MaxExactDistinct: o.Cell.MaxExactDistinct,
		SamplePairs:      o.Cell.SamplePairs,
		PassK:            o.Cell.PassK,
		FDRLevel:         metrics.FDRLevel,
		CountedRuns:      CountedRunsRule,
	}
	if s.MaxExactDistinct == 0 {
		s.MaxExactDistinct = metrics.DefaultMaxExactDistinct
	}
	if s.SamplePairs == 0 {
		s.SamplePairs = metrics.DefaultSamplePairs
	}
	if s.PassK == nil {
		s.PassK = metrics.DefaultPassK
	}
	return s
}

func (p Pair) matches(condition string) bool {
	return condition != p.A && (p.B == AnyCondition || p.B == condition)
}

// group is the cells of one (task, model), conditions sorted.
type group struct {
	task, model string
	conditions  []string
}

func groupCells(cells []cellRow) []group {
	var out []group
	for _, c := range cells { // sorted by task, model, condition
		if n := len(out); n == 0 || out[n-1].task != c.key.Task || out[n-1].model != c.key.Model {
			out = append(out, group{task: c.key.Task, model: c.key.Model})
		}
		g := &out[len(out)-1]
		g.conditions = append(g.conditions, c.key.Condition)
	}
	return out
}

// resolvePairs returns the pairs to compare and the rule that chose them. A production study
// without explicit pairs compares consecutive releases: releases are ordered by the first start
// of a counted run over the whole study (then by name), so the order is the deployment order.
func resolvePairs(sourceKind string, explicit []Pair, cells []cellRow) ([]Pair, string) {
	if explicit != nil {
		return slices.Clone(explicit), RulePairs
	}
	if sourceKind != SourceProduction {
		return slices.Clone(DefaultPairs), RulePairs
	}
	first := map[string]int64{}
	for _, c := range cells {
		if c.firstStartedUS == nil {
			continue
		}
		if t, ok := first[c.key.Condition]; !ok || *c.firstStartedUS < t {
			first[c.key.Condition] = *c.firstStartedUS
		}
	}
	releases := make([]string, 0, len(first))
	for r := range first {
		releases = append(releases, r)
	}
	slices.SortFunc(releases, func(a, b string) int {
		if first[a] != first[b] {
			if first[a] < first[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	pairs := []Pair{}
	for i := 1; i < len(releases); i++ {
		pairs = append(pairs, Pair{A: releases[i-1], B: releases[i]})
	}
	return pairs, RuleConsecutiveReleases
}

// cellNotes describes what the metrics of a cell leave out or cannot vouch for.
func cellNotes(c cellRow, m metrics.CellMetrics) []string {
	var out []string
	d := c.data
	if d.ExpectedRuns != nil && d.CountedRuns < *d.ExpectedRuns {
		out = append(out, fmt.Sprintf("%s: %d of %d expected runs scored", c.key, d.CountedRuns, *d.ExpectedRuns))
	}
	if d.ErroredRuns > 0 {
		out = append(out, fmt.Sprintf("%s: errored runs, not scored (the model or a tool server never answered): %d — %s", c.key, d.ErroredRuns, causesText(d.Causes)))
	}
	if d.AbortedRuns > 0 {
		out = append(out, fmt.Sprintf("%s: aborted runs, not scored: %d", c.key, d.AbortedRuns))
	}
	if n := d.IncompleteRuns - d.FoldErrors; n > 0 {
		out = append(out, fmt.Sprintf("%s: runs without a finished attempt, not scored: %d (attempts still running or lost: %d)", c.key, n, d.RunningAttempts))
	}
	if d.FoldErrors > 0 {
		out = append(out, fmt.Sprintf("%s: finished runs whose history has a gap or an event the fold refuses, incomplete and not scored until it is whole (see the anomalies view): %d", c.key, d.FoldErrors))
	}
	if d.SupersededAttempts > 0 {
		out = append(out, fmt.Sprintf("%s: superseded attempts, not counted: %d (%d of them finished; they spent %d tokens and %d retries)", c.key, d.SupersededAttempts, d.SupersededFinished, d.SupersededTokens, d.SupersededRetries))
	}
	if d.CheckErrors > 0 {
		out = append(out, fmt.Sprintf("%s: scored runs whose run.finished totals disagree with their events: %d", c.key, d.CheckErrors))
	}
	if m.N > 0 && (c.distinctTraces != int64(m.DistinctTraces) || c.distinctOutputs != int64(m.DistinctOutputs) || c.distinctTools != int64(m.DistinctToolSeqs)) {
		out = append(out, fmt.Sprintf("%s: the stored signatures group runs differently from package metrics (%d/%d/%d distinct traces/outputs/tool sequences against %d/%d/%d); rebuild the database (analyzer rebuild)",
			c.key, c.distinctTraces, c.distinctOutputs, c.distinctTools, m.DistinctTraces, m.DistinctOutputs, m.DistinctToolSeqs))
	}
	if g := m.InputGroups; g != nil && g.Groups == 0 && m.N >= 2 {
		out = append(out, fmt.Sprintf("%s: no input seen twice (%d runs, each of another input or without an input key); pairwise metrics are undefined (null)", c.key, m.N))
	}
	switch m.N {
	case 0:
		out = append(out, fmt.Sprintf("%s: no scored run; every metric is undefined (null)", c.key))
	case 1:
		out = append(out, fmt.Sprintf("%s: one scored run; pairwise metrics are undefined (null)", c.key))
	}
	return out
}

// causesText lists causes as "kind: detail (n runs)", most frequent first, at most three.
func causesText(cs []Cause) string {
	var parts []string
	for i, c := range cs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s (%d)", c.Kind, c.Detail, c.Runs))
	}
	return strings.Join(parts, "; ")
}
