package analysis

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

func TestStoreReplacesStudyRows(t *testing.T) {
	envs, _ := harnessStudy("s1")
	envs2, _ := harnessStudy("s3")
	w := ingest(t, append(envs, envs2...))
	ctx := warehousetest.Context(t, 5*time.Minute) // a guard against a hang, not a timing: it once ran out at 60 s under a load of 31
	db := w.DB()
	rep := mustCompute(t, db, "s1")
	rep3 := mustCompute(t, db, "s3")
	for _, r := range []*Result{rep, rep3, rep} { // s1 twice: replaced, not appended
		if err := Store(ctx, db, r); err != nil {
			t.Fatalf("Store(%s) = %v", r.Study.ID, err)
		}
	}
	var wantMetrics int
	for _, c := range rep.Cells {
		rows, err := MetricRows(c.Metrics)
		if err != nil {
			t.Fatal(err)
		}
		wantMetrics += len(rows)
	}
	if n := warehousetest.Count(t, db, "SELECT count(*) FROM metrics WHERE study = 's1'"); n != int64(wantMetrics) {
		t.Errorf("metrics holds %d rows of s1, want %d", n, wantMetrics)
	}
	if n := warehousetest.Count(t, db, "SELECT count(*) FROM comparisons WHERE study = 's1'"); n != int64(len(rep.Comparisons)) {
		t.Errorf("comparisons holds %d rows of s1, want %d", n, len(rep.Comparisons))
	}
	if n := warehousetest.Count(t, db, "SELECT count(*) FROM comparisons WHERE study = 's3'"); n != int64(len(rep3.Comparisons)) {
		t.Errorf("comparisons holds %d rows of s3, want %d (storing s1 again must not touch s3)", n, len(rep3.Comparisons))
	}

	// Values round-trip: RR and its SE of the first cell, a comparison's adjusted p, nulls.
	c := rep.Cells[0]
	var v, se float64
	if err := db.QueryRow(`SELECT value, se FROM metrics WHERE study = 's1' AND task = ? AND model = ? AND condition = ? AND metric = 'rr'`,
		c.Task, c.Model, c.Condition).Scan(&v, &se); err != nil {
		t.Fatal(err)
	}
	if v != c.Metrics.RR.Value.V || se != c.Metrics.RR.SE.V {
		t.Errorf("stored rr = %v ± %v, want %v ± %v", v, se, c.Metrics.RR.Value.V, c.Metrics.RR.SE.V)
	}
	if n := warehousetest.Count(t, db, `SELECT count(*) FROM metrics WHERE study = 's1' AND condition = 'missing' AND metric = 'rr' AND value IS NULL AND se IS NULL`); n != 1 {
		t.Errorf("rr of the empty cell stored %d times as NULL, want once", n)
	}
	for _, name := range []string{"success.rate", "success.wilson_low", "pass_k.1", "tokens.median", "latency_ms.p95", "harness.retries_per_run", "divergence.0", "di_tools", "output_modal_share"} {
		if n := warehousetest.Count(t, db, `SELECT count(*) FROM metrics WHERE study = 's1' AND metric = ?`, name); n == 0 {
			t.Errorf("no metric %q stored", name)
		}
	}
	if n := warehousetest.Count(t, db, `SELECT count(*) FROM comparisons WHERE study = 's1' AND p IS NOT NULL AND (p_adjusted IS NULL OR p_adjusted < p)`); n != 0 {
		t.Errorf("%d stored comparisons with p lack a valid adjusted p", n)
	}
	if n := warehousetest.Count(t, db, `SELECT count(*) FROM comparisons WHERE study = 's1' AND p IS NULL AND reason IS NULL`); n != 0 {
		t.Errorf("%d stored comparisons without p lack a reason", n)
	}
	checkStoredPSE(t, db, rep)
}

// checkStoredPSE checks that every comparison of rep is stored with its p_se: the Monte Carlo
// standard error where a permutation p-value is estimated, NULL elsewhere.
func checkStoredPSE(t *testing.T, db *sql.DB, rep *Result) {
	t.Helper()
	estimated := 0
	for _, c := range rep.Comparisons {
		var got sql.NullFloat64
		if err := db.QueryRow(`SELECT p_se FROM comparisons WHERE study = ? AND task = ? AND model = ? AND condition_a = ?
			AND condition_b = ? AND quantity = ? AND test = ?`, rep.Study.ID, c.Task, c.Model, c.ConditionA, c.ConditionB,
			c.Quantity, c.Test).Scan(&got); err != nil {
			t.Fatalf("p_se of %s %s %s: %v", c.ConditionB, c.Quantity, c.Test, err)
		}
		if got.Valid != c.PSE.Valid || got.Valid && got.Float64 != c.PSE.V {
			t.Errorf("stored p_se of %s %s %s = %v, want %v", c.ConditionB, c.Quantity, c.Test, got, c.PSE)
		}
		if c.PSE.Valid {
			estimated++
		}
	}
	if estimated == 0 {
		t.Error("no comparison of the study has an estimated p (p_se): the check compared NULLs only")
	}
}

// TestStoreAddsPSEToOldTable: a comparisons table created before p_se existed gets the column
// when a study is stored again, and the estimated p-values' standard errors in it.
func TestStoreAddsPSEToOldTable(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	ctx := warehousetest.Context(t, 60*time.Second)
	db := w.DB()
	old := strings.Replace(queries.AnalysisTableComparisons.SQL, ",\n    p_se        DOUBLE\n", "\n", 1)
	if old == queries.AnalysisTableComparisons.SQL {
		t.Fatal("the comparisons table's DDL no longer ends with p_se; update this test's table of before p_se")
	}
	if _, err := db.ExecContext(ctx, old); err != nil {
		t.Fatal(err)
	}
	rep := mustCompute(t, db, "s1")
	if err := Store(ctx, db, rep); err != nil {
		t.Fatalf("Store on a table without p_se = %v", err)
	}
	checkStoredPSE(t, db, rep)
}
