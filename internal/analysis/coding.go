package analysis

import (
	"context"
	"fmt"
	"slices"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// Coding is the coding section of a study's analysis: per cell, the coding figures of its
// counted runs; per model and harness factor (diagnostics distilled vs raw, tests protected vs
// open, bash vs file tools), success compared on paired runs — the same task and seed index
// under the two levels of the factor with every other factor equal — by the exact McNemar test,
// Benjamini–Hochberg adjusted across the section's comparisons.
type Coding struct {
	Cells       []CodingCell       `json:"cells"`
	Comparisons []CodingComparison `json:"comparisons"`
	// Skipped lists the comparisons whose runs could not be paired unambiguously.
	Skipped []SkippedComparison `json:"skipped,omitempty"`
}

// CodingCell is one (task, model, condition) cell's coding figures; per-run means over its
// counted runs.
type CodingCell struct {
	CellKey
	Runs                int     `json:"runs"`
	Successes           int     `json:"successes"`
	TestsPassChanged    int     `json:"tests_pass_with_test_changes"` // runs whose tests passed with a test file changed: the test-degradation trap
	Tokens              float64 `json:"tokens"`
	Turns               float64 `json:"turns"`
	Repatches           float64 `json:"repatches"`
	RepairTurns         float64 `json:"repair_turns"`
	ProtectedAttempts   float64 `json:"protected_attempts"`
	TestFilesChanged    float64 `json:"test_files_changed"`
	VerificationMS      float64 `json:"verification_ms"`
	LatencyMS           float64 `json:"latency_ms"`
	VerificationShare   float64 `json:"verification_share"` // verification time over run time, pooled
	RawBytes            float64 `json:"raw_bytes"`
	DistilledBytes      float64 `json:"distilled_bytes"`
	RunsWithProtectedAt int     `json:"runs_with_protected_attempts"`
}

// CodingComparison is one factor's paired success comparison for a model.
type CodingComparison struct {
	Model  string `json:"model"`
	Factor string `json:"factor"` // the component switched on in B: distilled_diagnostics, test_protection or bash_only
	Pairs  int    `json:"pairs"`
	// B counts pairs where A (the factor off) succeeded and B (on) failed; C the reverse.
	B           int           `json:"b"`
	C           int           `json:"c"`
	SuccessA    float64       `json:"success_a"`
	SuccessB    float64       `json:"success_b"`
	P           metrics.Value `json:"p"`
	PAdjusted   metrics.Value `json:"p_adjusted"`
	Significant bool          `json:"significant"`
}

// CodingFactors are the components a coding study's comparisons switch.
var CodingFactors = []string{events.ComponentDistilled, events.ComponentTestProtection, events.ComponentBashOnly}

type codingRun struct {
	runSetting
	success, testsPass        bool
	tokens, latency, verifyMS float64
	turns, repatches, repairs int64
	protected, testChanged    int64
	rawBytes, distilledBytes  int64
}

var codingCols = []string{"task", "model", "condition", "seed_index", "success", "tokens", "latency_ms", "turns",
	"verifications", "patch_turns", "repair_turns", "verification_ms", "files_changed", "repatches", "protected_attempts",
	"test_files_changed", "raw_bytes", "distilled_bytes", "tests_pass", "input_index", "components", "context_tier", "context_budget"}

// ComputeCoding computes the coding section of a study through q, or nil when the study has
// no coding run.
func ComputeCoding(ctx context.Context, q Querier, study string) (*Coding, error) {
	runs, err := loadPairedRuns(ctx, q, queries.ReportCoding, study, codingCols, func(c *row, s runSetting) codingRun {
		r := codingRun{runSetting: s}
		r.success = c.bool(4)
		r.tokens, r.latency = c.float(5), c.float(6)
		r.turns = c.int(7)
		r.repairs = c.int(10)
		r.verifyMS = c.float(11)
		r.repatches = c.int(13)
		r.protected, r.testChanged = c.int(14), c.int(15)
		r.rawBytes, r.distilledBytes = c.int(16), c.int(17)
		r.testsPass = c.bool(18)
		return r
	})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, nil
	}
	out := &Coding{Cells: codingCells(runs)}
	out.Comparisons, out.Skipped, err = codingComparisons(runs)
	return out, err
}

func codingCells(runs []codingRun) []CodingCell {
	byKey := map[CellKey]*CodingCell{}
	var keys []CellKey
	var verify, latency = map[CellKey]float64{}, map[CellKey]float64{}
	for _, r := range runs {
		c := byKey[r.CellKey]
		if c == nil {
			c = &CodingCell{CellKey: r.CellKey}
			byKey[r.CellKey] = c
			keys = append(keys, r.CellKey)
		}
		c.Runs++
		if r.success {
			c.Successes++
		}
		if r.testsPass && r.testChanged > 0 {
			c.TestsPassChanged++
		}
		if r.protected > 0 {
			c.RunsWithProtectedAt++
		}
		c.Tokens += r.tokens
		c.Turns += float64(r.turns)
		c.Repatches += float64(r.repatches)
		c.RepairTurns += float64(r.repairs)
		c.ProtectedAttempts += float64(r.protected)
		c.TestFilesChanged += float64(r.testChanged)
		c.VerificationMS += r.verifyMS
		c.LatencyMS += r.latency
		c.RawBytes += float64(r.rawBytes)
		c.DistilledBytes += float64(r.distilledBytes)
		verify[r.CellKey] += r.verifyMS
		latency[r.CellKey] += r.latency
	}
	slices.SortFunc(keys, func(a, b CellKey) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	out := make([]CodingCell, 0, len(keys))
	for _, k := range keys {
		c := byKey[k]
		n := float64(c.Runs)
		c.Tokens /= n
		c.Turns /= n
		c.Repatches /= n
		c.RepairTurns /= n
		c.ProtectedAttempts /= n
		c.TestFilesChanged /= n
		c.VerificationMS /= n
		c.LatencyMS /= n
		c.RawBytes /= n
		c.DistilledBytes /= n
		if latency[k] > 0 {
			c.VerificationShare = verify[k] / latency[k]
		}
		out = append(out, *c)
	}
	return out
}

// codingComparisons pairs runs across the two levels of each factor: same model, task, input,
// seed index and every other part of the condition (components, context tier and budget). A
// factor whose pairing is ambiguous is skipped and listed.
func codingComparisons(runs []codingRun) ([]CodingComparison, []SkippedComparison, error) {
	var out []CodingComparison
	var skips []SkippedComparison
	models := map[string]bool{}
	for _, r := range runs {
		models[r.Model] = true
	}
	setting := func(r *codingRun) *runSetting { return &r.runSetting }
	for _, m := range sortedKeys(models) {
		for _, f := range CodingFactors {
			pairs, err := pairRuns(runs, f, setting, func(r *codingRun) int {
				switch {
				case r.Model != m:
					return -1
				case slices.Contains(r.components, f):
					return 1
				}
				return 0
			})
			if sk, ok := skipped(err, m, f, "off", "on", ""); ok {
				skips = append(skips, sk)
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("analysis: coding: %w", err)
			}
			if len(pairs) == 0 {
				continue
			}
			c := CodingComparison{Model: m, Factor: f, Pairs: len(pairs)}
			var sa, sb int
			for _, p := range pairs {
				off, on := p[0], p[1]
				sa += countIf(off.success)
				sb += countIf(on.success)
				switch {
				case off.success && !on.success:
					c.B++
				case !off.success && on.success:
					c.C++
				}
			}
			c.SuccessA, c.SuccessB = float64(sa)/float64(c.Pairs), float64(sb)/float64(c.Pairs)
			p, err := metrics.McNemarExact(c.B, c.C)
			if err != nil {
				return nil, nil, fmt.Errorf("analysis: coding: %w", err)
			}
			c.P = metrics.Some(p)
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		ps := make([]float64, len(out))
		for i, c := range out {
			ps[i] = c.P.V
		}
		adj, rej, err := metrics.BenjaminiHochberg(ps)
		if err != nil {
			return nil, nil, fmt.Errorf("analysis: coding: %w", err)
		}
		for i := range out {
			out[i].PAdjusted, out[i].Significant = metrics.Some(adj[i]), rej[i]
		}
	}
	return out, skips, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
