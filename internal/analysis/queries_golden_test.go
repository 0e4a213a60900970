package analysis

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

// goldenCases give each analysis statement its parameters. Statements that write run after
// the two table statements, in a transaction that is rolled back.
var goldenCases = map[string][]any{
	"analysis_study":              {"s1"},
	"analysis_cells":              {"s1"},
	"analysis_runs":               {"s1", nil, nil, "harness_sp", nil, nil},
	"analysis_causes":             {"s1"},
	"analysis_traces":             {"s1", "credit_ecl", "sim-a", nil, nil, studyClock.Add(41 * time.Second).UnixMicro()},
	"analysis_table_metrics":      nil,
	"analysis_table_comparisons":  nil,
	"analysis_add_p_se":           nil,
	"analysis_delete_metrics":     {"s1"},
	"analysis_delete_comparisons": {"s1"},
	"analysis_insert_metric":      {"s1", "t", "m", "c", int64(3), "rr", 0.5, nil, false, nil},
	"analysis_insert_comparison": {"s1", "t", "m", "baseline", "harness", "success", "fisher_exact", nil, int64(3), int64(4),
		0.5, 0.75, 0.25, 2.0, nil, 0.6, 0.9, false, "table", nil, 0.004},
}

// TestQueriesGolden executes every analysis statement of package queries against a database
// filled through the real ingestion path (the harness study and the production samples) and
// compares the result with testdata/golden/<name>.golden (go test -run TestQueriesGolden -update).
func TestQueriesGolden(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, append(envs, sampleEnvs(t)...))
	db := w.DB()
	ran := 0
	for _, s := range queries.All() {
		if s.Kind != queries.Analysis {
			continue
		}
		ran++
		t.Run(s.Name, func(t *testing.T) {
			args, ok := goldenCases[s.Name]
			if !ok {
				t.Fatalf("no golden case for %s: add one to goldenCases", s.Name)
			}
			warehousetest.CheckGolden(t, s.Name, runRolledBack(t, db, s, args)+"\n")
		})
	}
	if ran != len(goldenCases) {
		t.Errorf("%d analysis statements, %d golden cases", ran, len(goldenCases))
	}
}

// runRolledBack runs a statement after the two table statements, in a transaction that is
// rolled back, so that the cases do not see each other's writes.
func runRolledBack(t *testing.T, db *sql.DB, s queries.Statement, args []any) string {
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, ddl := range []queries.Statement{queries.AnalysisTableMetrics, queries.AnalysisTableComparisons} {
		if _, err := tx.Exec(ddl.SQL); err != nil {
			t.Fatal(err)
		}
	}
	if strings.HasPrefix(s.Name, "analysis_delete") {
		// Something to delete: one row of another study survives, one of s1 goes.
		if _, err := tx.Exec(queries.AnalysisInsertMetric.SQL, "s1", "t", "m", "c", int64(1), "rr", nil, nil, false, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(queries.AnalysisInsertComparison.SQL, "s1", "t", "m", "a", "b", "rr", "permutation", nil,
			int64(1), int64(1), nil, nil, nil, nil, nil, nil, nil, false, nil, "a cell has no runs", nil); err != nil {
			t.Fatal(err)
		}
	}
	return warehousetest.Run(t, tx, s, args)
}
