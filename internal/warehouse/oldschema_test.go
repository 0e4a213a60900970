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
	for _, o := range []string{"run_folds", "runs", "cells"} {
		if got := warehousetest.Dump(t, ro.DB(), o); strings.Join(got, "\n") != strings.Join(want[o], "\n") {
			t.Errorf("%s of the old database opened read-only differs", o)
		}
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
