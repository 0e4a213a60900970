package warehouse_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

// TestOpenRefusesOldRunFolds: a database whose run_folds predates the run statuses and input
// keys (written by an older ditto) is refused with ErrOldSchema naming the rebuild, rather
// than opened and failing at the first fold it writes.
func TestOpenRefusesOldRunFolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE run_folds (study VARCHAR NOT NULL, run VARCHAR NOT NULL, attempt INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: path})
	if err == nil {
		w.Close()
	}
	if !errors.Is(err, warehouse.ErrOldSchema) || !strings.Contains(err.Error(), "analyzer rebuild") {
		t.Errorf("Open = %v, want ErrOldSchema naming analyzer rebuild", err)
	}
}

// TestOldRunFoldsMigrate: a database whose run folds are a table run_folds of the shape builds
// before run_fold_rows wrote (testdata/oldschema, that build's DDL) opens, its rows moved to
// run_fold_rows in the shape this build writes, and every view reads the same values as from
// the database this build ingested; opened again, it is left as it is. Opened read-only before
// that, it is read as it is.
func TestOldRunFoldsMigrate(t *testing.T) {
	w := goldenDB(t)
	path := w.Path()
	objects := append(warehouse.Tables(), "run_fold_rows")
	want := map[string][]string{}
	for _, o := range objects {
		want[o] = warehousetest.Dump(t, w.DB(), o)
	}
	if len(want["run_folds"]) == 0 {
		t.Fatal("the golden data set has no run_folds rows")
	}
	wantReads := analysisReads(t, w.DB())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// The same database as the older build left it: run_folds a table of its DDL, no run_fold_rows.
	oldDDL, err := os.ReadFile(filepath.Join("testdata", "oldschema", "table_run_folds.sql"))
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old.duckdb")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", old)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE saved AS SELECT * FROM run_folds",
		"DROP VIEW run_folds",
		"DROP TABLE run_fold_rows",
		string(oldDDL),
		"INSERT INTO run_folds SELECT * FROM saved",
		"DROP TABLE saved",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	var kind string
	if err := db.QueryRow("SELECT table_name FROM duckdb_tables() WHERE table_name = 'run_folds'").Scan(&kind); err != nil {
		t.Fatalf("the old database has no run_folds table: %v", err)
	}
	db.Close()

	// Opened read-only (analyzer metrics), it is read as it is, run_folds being its table.
	ro, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: old, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// One connection held, so that the reads below take another: each connection presents the
	// table as run_fold_rows, which the analysis statements read.
	held, err := ro.DB().Conn(warehousetest.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"run_folds", "runs", "cells", "run_fold_rows"} {
		if got := warehousetest.Dump(t, ro.DB(), o); strings.Join(got, "\n") != strings.Join(want[o], "\n") {
			t.Errorf("%s of the old database opened read-only differs", o)
		}
	}
	for name, rows := range analysisReads(t, ro.DB()) {
		if strings.Join(rows, "\n") != strings.Join(wantReads[name], "\n") {
			t.Errorf("%s of the old database opened read-only differs:\n got %.400q\nwant %.400q", name, rows, wantReads[name])
		}
	}
	if len(wantReads) != 4 {
		t.Errorf("%d analysis statements read, want 4", len(wantReads))
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	w = openWH(t, old)
	for _, o := range objects {
		got := warehousetest.Dump(t, w.DB(), o)
		if strings.Join(got, "\n") != strings.Join(want[o], "\n") {
			t.Errorf("%s after the migration differs:\n got %d rows: %.400q\nwant %d rows: %.400q", o, len(got), got, len(want[o]), want[o])
		}
	}
	var tables int
	if err := w.DB().QueryRow("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'run_folds'").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("run_folds tables after the migration: %d (%v), want 0 (a view)", tables, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Opened again, nothing is left to migrate and nothing changes.
	w = openWH(t, old)
	defer w.Close()
	for _, o := range []string{"run_folds", "runs"} {
		if got := warehousetest.Dump(t, w.DB(), o); strings.Join(got, "\n") != strings.Join(want[o], "\n") {
			t.Errorf("%s after a second open differs", o)
		}
	}
}

// analysisReads runs the analysis statements that read run_fold_rows itself for every study of
// db and returns their rows by statement.
func analysisReads(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	studies := warehousetest.Strings(t, db, "SELECT DISTINCT study FROM run_folds ORDER BY study")
	out := map[string][]string{}
	for _, s := range []queries.Statement{queries.AnalysisCells, queries.AnalysisCauses, queries.AnalysisRuns, queries.AnalysisTraces} {
		for _, study := range studies {
			args := []any{study}
			if s.Name == queries.AnalysisRuns.Name || s.Name == queries.AnalysisTraces.Name {
				args = append(args, nil, nil, nil, nil, nil)
			}
			rows, err := db.Query(s.SQL, args...)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			out[s.Name] = append(out[s.Name], warehousetest.Rows(t, rows)...)
		}
		if len(out[s.Name]) == 0 && s.Name != queries.AnalysisCauses.Name {
			t.Errorf("%s: no rows", s.Name)
		}
	}
	return out
}
