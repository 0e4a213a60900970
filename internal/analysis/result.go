package analysis

import (
	"github.com/dittolab/ditto/metrics"
)

// CountedRunsRule states which runs a cell's N counts; it is part of every Result.
const CountedRunsRule = "each run counts once, by its latest finished attempt, and is scored (in N and every " +
	"metric) when that attempt is the agent's behaviour: succeeded, failed, escalated or overflow; errored runs " +
	"(the model or a tool server never answered) and aborted runs are counted with their causes, not scored; " +
	"runs without a finished attempt, or whose history has a gap or an event the fold refuses, are incomplete " +
	"and not scored; earlier attempts of the same run are superseded"

// Result is the analysis of one study: every cell, every comparison, and notes on the data.
// It holds no wall clock and no map, so the same events and Options give an equal Result.
// Package report renders it (the tables of `analyzer metrics`, the metrics JSON document,
// the Markdown and HTML reports); its JSON field names are the document's.
type Result struct {
	Study Study `json:"study"`
	// GeneratedAt is the time of the study's latest event (RFC 3339, UTC), not the wall clock.
	GeneratedAt *string  `json:"generated_at"`
	Settings    Settings `json:"settings"`
	// Cells are ordered by task, model, condition.
	Cells []Cell `json:"cells"`
	// Comparisons are ordered by task, model, then pair order (Settings), then quantity as
	// metrics.Compare returns them. PAdjusted is Benjamini–Hochberg across all of them.
	Comparisons []Comparison `json:"comparisons"`
	// Notes describe the data: runs not counted, fold errors, missing cells.
	Notes []string `json:"notes"`
}

// Source kinds of a study (Study.SourceKind): runs of the harness, or production traffic,
// whose pairwise metrics are taken within input groups.
const (
	SourceHarness    = "harness"
	SourceProduction = "production"
)

// Study describes the study of a Result.
type Study struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// SourceKind is harness or production.
	SourceKind string `json:"source_kind"`
	// Paired says that runs pair across conditions by input and seed index (McNemar).
	Paired       bool   `json:"paired"`
	ExpectedRuns *int64 `json:"expected_runs"`
}

// Settings record how the Result was computed.
type Settings struct {
	Permutations int    `json:"permutations"`
	Seed         uint64 `json:"seed"`
	// PairRule is RulePairs or RuleConsecutiveReleases; Pairs are the pairs compared (for
	// consecutive releases, the resolved pairs of releases).
	PairRule         string  `json:"pair_rule"`
	Pairs            []Pair  `json:"pairs"`
	MaxExactDistinct int     `json:"max_exact_distinct"`
	SamplePairs      int     `json:"sample_pairs"`
	PassK            []int   `json:"pass_k"`
	FDRLevel         float64 `json:"fdr_level"`
	CountedRuns      string  `json:"counted_runs"`
}

// CellKey names a cell within a study.
type CellKey struct {
	Task      string `json:"task"`
	Model     string `json:"model"`
	Condition string `json:"condition"`
}

// String returns "task/model/condition", the cell's label in comparisons.
func (k CellKey) String() string { return k.Task + "/" + k.Model + "/" + k.Condition }

func (k CellKey) less(o CellKey) bool {
	if k.Task != o.Task {
		return k.Task < o.Task
	}
	if k.Model != o.Model {
		return k.Model < o.Model
	}
	return k.Condition < o.Condition
}

// Cell is one cell's data accounting and metrics.
type Cell struct {
	CellKey
	Data    CellData            `json:"data"`
	Metrics metrics.CellMetrics `json:"metrics"`
}

// CellData accounts for a cell's runs and attempts (see CountedRunsRule).
type CellData struct {
	// ExpectedRuns is what study.defined planned (null without a definition).
	ExpectedRuns *int64 `json:"expected_runs"`
	// Runs counts the distinct runs seen, each in one cell: that of its latest finished attempt,
	// else of its latest attempt. CountedRuns counts the scored ones, in the metrics (N).
	Runs        int64 `json:"runs"`
	CountedRuns int64 `json:"counted_runs"`
	// ErroredRuns never reached their model or a tool server, or got no answer (Causes says
	// why); AbortedRuns were interrupted. Neither is scored.
	ErroredRuns int64 `json:"errored_runs"`
	AbortedRuns int64 `json:"aborted_runs"`
	// Causes are the causes of the errored runs, most frequent first.
	Causes []Cause `json:"causes"`
	// SupersededAttempts are attempts replaced by a later attempt of the same run (crash
	// recovery); SupersededFinished of them had finished. SupersededTokens and
	// SupersededRetries are the harness activity they spent, not in the metrics.
	SupersededAttempts int64 `json:"superseded_attempts"`
	SupersededFinished int64 `json:"superseded_finished"`
	SupersededTokens   int64 `json:"superseded_tokens"`
	SupersededRetries  int64 `json:"superseded_retries"`
	// IncompleteRuns have no finished attempt, or a history with a gap or an event the fold
	// refuses (FoldErrors of them); RunningAttempts are latest attempts without run.finished
	// (still running, or lost). None is scored.
	IncompleteRuns  int64 `json:"incomplete_runs"`
	RunningAttempts int64 `json:"running_attempts"`
	FoldErrors      int64 `json:"fold_errors"`
	// CheckErrors counts scored runs whose run.finished totals disagree with their events.
	CheckErrors int64 `json:"check_errors"`
	// FirstStarted and LastFinished bound the scored runs (RFC 3339, UTC).
	FirstStarted *string `json:"first_started"`
	LastFinished *string `json:"last_finished"`
}

// Cause is one cause of a cell's errored runs.
type Cause struct {
	// Kind is what failed (events.Cause* kinds: missing_key, unauthorized, model_not_found,
	// unreachable, timeout, rate_limited, server_error, tool_server, …).
	Kind string `json:"kind"`
	// Permanent says trying again could not help (a missing key, 401/403, an unknown model).
	Permanent bool   `json:"permanent"`
	Detail    string `json:"detail"`
	Runs      int64  `json:"runs"`
}

// Comparison is one test between two cells of the same task and model: condition B against
// the reference condition A. The embedded metrics.Comparison carries the quantity, both cell
// labels, both values, the difference (B − A), the test, its statistic, p, the
// Benjamini–Hochberg adjusted p and the verdict (significant).
type Comparison struct {
	Task       string `json:"task"`
	Model      string `json:"model"`
	ConditionA string `json:"condition_a"`
	ConditionB string `json:"condition_b"`
	metrics.Comparison
}

// Cell returns the cell k, or nil.
func (r *Result) Cell(k CellKey) *Cell {
	for i := range r.Cells {
		if r.Cells[i].CellKey == k {
			return &r.Cells[i]
		}
	}
	return nil
}
