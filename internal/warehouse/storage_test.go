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

// TestBacklogTransactionIsARowGroup: with a backlog, the committer's transaction of the default
// TxnBatches batches of the default BatchSize is exactly one DuckDB row group of events, which
// DuckDB then writes to the data file at COMMIT (persistent, no checkpoint needed) instead of
// through the WAL. A transaction of another size leaves its rows in memory until a checkpoint.
func TestBacklogTransactionIsARowGroup(t *testing.T) {
	const rowGroup = 122_880 // DuckDB's rows a row group
	n := warehouse.DefaultTxnBatches * warehouse.DefaultBatchSize
	if n != rowGroup {
		t.Fatalf("DefaultTxnBatches × DefaultBatchSize = %d events, want a row group (%d)", n, rowGroup)
	}
	subjects, raws := benchSubjectsRaws(t, n)
	ctx := warehousetest.Context(t, 5*time.Minute)
	// No checkpoint before the check: whatever is persistent then was written at COMMIT.
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t), CheckpointThreshold: "1GB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if _, err := warehouse.StoreForBench(ctx, w, subjects, raws, warehouse.DefaultBatchSize, 0); err != nil {
		t.Fatal(err)
	}
	var groups, rows int
	var persistent bool
	err = w.DB().QueryRow(`SELECT count(DISTINCT row_group_id), bool_and(persistent), (SELECT count(*) FROM events)
		FROM pragma_storage_info('events')`).Scan(&groups, &persistent, &rows)
	if err != nil {
		t.Fatal(err)
	}
	if groups != 1 || rows != n || !persistent {
		t.Errorf("events after one transaction of %d: %d rows in %d row groups, all persistent %v; want %d in 1 written at COMMIT",
			n, rows, groups, persistent, n)
	}
}
