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
	ErroredRuns int64    `json:"errored_runs"`
	FoldErrors  int64    `json:"fold_errors"`
	Attempts    int64    `json:"attempts"` // run attempts (retries included)
	Progress    *float64 `json:"progress"` // finished / expected, null without an expectation
	Done        bool     `json:"done"`     // finished_runs >= expected_runs
}

// studiesSQL reads the studies view of the projection (queries/view_studies.sql), which owns
// the definitions of these columns. It lives here rather than in queries/ because it is the
// API's choice of columns, not part of the schema.
const studiesSQL = `SELECT study, name, source_kind, expected_runs, runs, finished_runs,
       incomplete_runs, succeeded_runs, attempts, errored_runs, fold_errors
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
			&s.IncompleteRuns, &s.SucceededRuns, &s.Attempts, &s.ErroredRuns, &s.FoldErrors); err != nil {
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
