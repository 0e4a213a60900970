package warehouse_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// storageVersion returns the storage format DuckDB reports for the database file at path.
func storageVersion(t *testing.T, db *sql.DB, path string) string {
	t.Helper()
	var v string
	err := db.QueryRow(`SELECT tags['storage_version'] FROM duckdb_databases() WHERE path = $1`, path).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStorageVersion: a database Open creates is in DuckDB's v1.5.0 format (its newer string
// compression); one that exists, created in DuckDB's default format, keeps its format and is
// ingested into as before.
func TestStorageVersion(t *testing.T) {
	path := tempDB(t)
	w := openWH(t, path)
	if got := storageVersion(t, w.DB(), path); got != "v1.5.0+" {
		t.Errorf("new database: storage version %q, want v1.5.0+", got)
	}

	old := filepath.Join(t.TempDir(), "old.duckdb")
	db, err := sql.Open("duckdb", old)
	if err != nil {
		t.Fatal(err)
	}
	before := storageVersion(t, db, old)
	db.Close()
	if before == "v1.5.0+" {
		t.Fatalf("DuckDB's default format is already %s: the test shows nothing", before)
	}
	w = openWH(t, old)
	subjects, raws := benchSubjectsRaws(t, 3_000)
	if _, err := warehouse.StoreForBench(warehousetest.Context(t, time.Minute), w, subjects, raws, 1_000, 0); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := w.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&stored); err != nil || stored != len(raws) {
		t.Errorf("existing database: %d events stored (%v), want %d", stored, err, len(raws))
	}
	if got := storageVersion(t, w.DB(), old); got != before {
		t.Errorf("existing database: storage version %q after ingestion, want %q (as created)", got, before)
	}
}

// benchSubjectsRaws returns the subjects and bodies of n events of benchMsgs.
func benchSubjectsRaws(t *testing.T, n int) (subjects []string, raws [][]byte) {
	for _, m := range benchMsgs(t, n)[:n] {
		subjects, raws = append(subjects, m.Subject), append(raws, m.Data)
	}
	return subjects, raws
}
