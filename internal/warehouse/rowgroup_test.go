package warehouse_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestBacklogTransactionsAreRowGroups catches up a backlog of two DuckDB row groups of events
// with the default batch settings and a checkpoint threshold no transaction reaches, and reads
// the WAL before the database closes. A transaction of DefaultTxnBatches full batches appends
// one whole row group, which DuckDB's commit moves into the table already written to the
// database file: the WAL holds where it is, the run_folds rows and the watermark, not the
// events. Defaults whose transactions fall short of a row group (batches of 10,000 and
// transactions of 4, before 2026-12-04) put every event in the WAL, compressed and written again
// at the next checkpoint: their WAL here was 53 MB for the events' 70 MB, the defaults' 8 MB
// (docs/benchmarks.md, fourteenth session).
func TestBacklogTransactionsAreRowGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 245,760 events")
	}
	if warehouse.DefaultBatchSize*warehouse.DefaultTxnBatches != warehouse.RowGroupRows {
		t.Fatalf("DefaultTxnBatches × DefaultBatchSize = %d, want a row group, %d",
			warehouse.DefaultBatchSize*warehouse.DefaultTxnBatches, warehouse.RowGroupRows)
	}
	n := 2 * warehouse.RowGroupRows
	b := bustest.NewServer(t).Connect(t)
	msgs := benchMsgs(t, n)[:n]
	var raw int64
	for _, m := range msgs {
		raw += int64(len(m.Data))
	}
	warehousetest.PublishFast(t, b, msgs)
	msgs = nil
	ctx := warehousetest.Context(t, 5*time.Minute)
	path := filepath.Join(t.TempDir(), "rg.duckdb")
	w, err := warehouse.Open(ctx, warehouse.Config{Path: path, Threads: 1, CheckpointThreshold: "4GB"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The default batch and transaction sizes; a BatchWait no gathering reaches, so that a batch
	// slowed by a loaded machine is not cut short (and committed alone, through the WAL).
	if err := w.CatchUp(ctx, b, warehouse.IngestConfig{BatchWait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Events; got != uint64(n) {
		t.Fatalf("stored %d events, want %d", got, n)
	}
	fi, err := os.Stat(path + ".wal")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("WAL %d bytes after %d events of %d bytes", fi.Size(), n, raw)
	if fi.Size() > raw/4 {
		t.Errorf("the WAL holds %d bytes after %d events of %d bytes: the backlog's transactions were not written as row groups", fi.Size(), n, raw)
	}
}
