package queryapi

import (
	"context"
	"database/sql"
	"fmt"
)

// Study is one row of GET /v1/studies: how far a study has got.
type Study struct {
	Study          string `json:"study"`
	Name           string `json:"name"`
	SourceKind     string `json:"source_kind"`     // harness or production
	ExpectedRuns   *int64 `json:"expected_runs"`   // null for studies without a definition (production traces)
	Runs           int64  `json:"runs"`            // distinct runs started
	FinishedRuns   int64  `json:"finished_runs"`   // runs whose latest attempt finished
	IncompleteRuns int64  `json:"incomplete_runs"` // runs started and not finished
	SucceededRuns  int64  `json:"succeeded_runs"`  // finished runs that succeeded
	// ErroredRuns never reached their model or a tool server (not scored); FoldErrors are
	// incomplete runs whose history has a gap or an event the fold refuses.
	ErroredRuns int64 `json:"errored_runs"`
	FoldErrors  int64 `json:"fold_errors"`
	// ScoredRuns are the finished runs the metrics count (succeeded, failed, escalated,
	// overflow); AbortedRuns were interrupted (not scored).
	ScoredRuns  int64    `json:"scored_runs"`
	AbortedRuns int64    `json:"aborted_runs"`
	Attempts    int64    `json:"attempts"` // run attempts (retries included)
	Progress    *float64 `json:"progress"` // finished / expected, null without an expectation
	Done        bool     `json:"done"`     // finished_runs >= expected_runs
}

// studiesSQL reads the studies view of the projection (queries/view_studies.sql), which owns
// the definitions of these columns. It lives here rather than in queries/ because it is the
// API's choice of columns, not part of the schema.
const studiesSQL = `SELECT study, name, source_kind, expected_runs, runs, finished_runs,
       incomplete_runs, succeeded_runs, attempts, errored_runs, fold_errors, scored_runs, aborted_runs
FROM studies
ORDER BY study`

// ReadStudies returns every study's progress from the database's studies view.
func ReadStudies(ctx context.Context, db *sql.DB) ([]Study, error) {
	rows, err := db.QueryContext(ctx, studiesSQL)
	if err != nil {
		return nil, fmt.Errorf("api: studies: %w", err)
	}
	defer rows.Close()
	out := []Study{}
	for rows.Next() {
		var s Study
		var name, kind sql.NullString
		var expected sql.NullInt64
		if err := rows.Scan(&s.Study, &name, &kind, &expected, &s.Runs, &s.FinishedRuns,
			&s.IncompleteRuns, &s.SucceededRuns, &s.Attempts, &s.ErroredRuns, &s.FoldErrors, &s.ScoredRuns, &s.AbortedRuns); err != nil {
			return nil, fmt.Errorf("api: studies: %w", err)
		}
		s.Name, s.SourceKind = name.String, kind.String
		if expected.Valid {
			e := expected.Int64
			s.ExpectedRuns = &e
			if e > 0 {
				p := float64(s.FinishedRuns) / float64(e)
				s.Progress = &p
			}
			s.Done = s.FinishedRuns >= e
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("api: studies: %w", err)
	}
	return out, nil
}

// RunCounts sum the studies' runs as the studies view counts them: the "runs" member of
// /healthz, equal to the sums of `analyzer status` and of the reports' data.
type RunCounts struct {
	Runs           int64 `json:"runs"`
	ScoredRuns     int64 `json:"scored_runs"`
	ErroredRuns    int64 `json:"errored_runs"`
	AbortedRuns    int64 `json:"aborted_runs"`
	IncompleteRuns int64 `json:"incomplete_runs"`
	FoldErrors     int64 `json:"fold_errors"`
}

// CountRuns sums the studies' run counts.
func CountRuns(st []Study) RunCounts {
	var c RunCounts
	for _, s := range st {
		c.Runs += s.Runs
		c.ScoredRuns += s.ScoredRuns
		c.ErroredRuns += s.ErroredRuns
		c.AbortedRuns += s.AbortedRuns
		c.IncompleteRuns += s.IncompleteRuns
		c.FoldErrors += s.FoldErrors
	}
	return c
}
