package report

import (
	"fmt"

	"github.com/dittolab/ditto/metrics"
)

// CodingCellTable is the coding figures per cell (per-run means).
func (r *Report) CodingCellTable() Table {
	t := Table{Header: []string{"task", "model", "condition", "runs", "success", "tests pass with test files changed",
		"re-patches", "repair turns", "protected-file attempts", "runs with protected attempts", "turns", "tokens",
		"diagnostics bytes raw / distilled", "verification ms", "run ms", "verification share"}}
	if r.Coding == nil {
		return t
	}
	for _, c := range r.Coding.Cells {
		t.Rows = append(t.Rows, []string{c.Task, c.Model, c.Condition, fmt.Sprint(c.Runs),
			fmt.Sprintf("%d/%d", c.Successes, c.Runs), fmt.Sprint(c.TestsPassChanged),
			num(metrics.Some(c.Repatches), 2), num(metrics.Some(c.RepairTurns), 2), num(metrics.Some(c.ProtectedAttempts), 2),
			fmt.Sprint(c.RunsWithProtectedAt), num(metrics.Some(c.Turns), 1), num(metrics.Some(c.Tokens), 0),
			num(metrics.Some(c.RawBytes), 0) + " / " + num(metrics.Some(c.DistilledBytes), 0),
			num(metrics.Some(c.VerificationMS), 0), num(metrics.Some(c.LatencyMS), 0), num(metrics.Some(c.VerificationShare), 2)})
	}
	return t
}

// CodingComparisonTable is the paired success comparison of each harness factor per model.
func (r *Report) CodingComparisonTable() Table {
	t := Table{Header: []string{"model", "factor (B: on, A: off)", "pairs", "success A", "success B",
		"b (A ok, B not)", "c (B ok, A not)", "test", "p", "q", "verdict"}, Flag: map[int]bool{}}
	if r.Coding == nil {
		return t
	}
	for i, c := range r.Coding.Comparisons {
		verdict := "no significant difference"
		if c.Significant {
			verdict = "B higher"
			if c.SuccessB < c.SuccessA {
				verdict = "B lower"
				t.Flag[i] = true
			}
		}
		t.Rows = append(t.Rows, []string{c.Model, c.Factor, fmt.Sprint(c.Pairs), num(metrics.Some(c.SuccessA), 2),
			num(metrics.Some(c.SuccessB), 2), fmt.Sprint(c.B), fmt.Sprint(c.C), metrics.TestMcNemar, pValue(c.P), pValue(c.PAdjusted), verdict})
	}
	return t
}

const codingIntro = "Coding runs: per-run means of each cell's counted runs. Success requires the tests to pass with no test file changed; " +
	"\"tests pass with test files changed\" counts the runs that fell into the test-degradation trap (possible only without test protection). " +
	"Re-patches are changes of a file already changed in the run; protected-file attempts are test-file writes refused or reverted. " +
	"The determinism metrics of the same cells are in the Cells table."

const codingComparisonIntro = "Each factor's effect on success, per model: runs paired on task, input, seed index and every other part of their condition, " +
	"exact McNemar test on the discordant pairs, q adjusted by Benjamini–Hochberg across this table."
