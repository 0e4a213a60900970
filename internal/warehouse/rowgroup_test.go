package warehouse_test

import (
	"context"
	"errors"
	"fmt"
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
	if st := w.Stats(); st.Events != uint64(n) || st.ShortTransactions != 0 {
		t.Fatalf("stored %d events, %d transactions short of a row group; want %d, none", st.Events, st.ShortTransactions, n)
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

// TestHeldTransactionEndsWhenStreamQuiet catches up backlogs of three full batches, and of three
// and a partial one, with the default batch settings and a BatchWait of an hour. The
// transaction held open for a row group is committed once the stream has gone quiet, with the
// partial batch in it, not after BatchWait: CatchUp returns within the test's minutes, all in
// one transaction. Before the quiet rule the transaction waited BatchWait for a batch that
// never came (BenchmarkIngest paid a second in every pass).
func TestHeldTransactionEndsWhenStreamQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 30,000 events twice")
	}
	for _, n := range []int{3 * warehouse.DefaultBatchSize, 3*warehouse.DefaultBatchSize + 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := bustest.NewServer(t).Connect(t)
			warehousetest.PublishFast(t, b, benchMsgs(t, n)[:n])
			ctx := warehousetest.Context(t, 3*time.Minute)
			w, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(t.TempDir(), "quiet.duckdb")})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.CatchUp(ctx, b, warehouse.IngestConfig{BatchWait: time.Hour}); err != nil {
				t.Fatalf("catching up %d events with a BatchWait of an hour: %v", n, err)
			}
			st := w.Stats()
			if st.Events != uint64(n) || st.Batches != 1 || st.ShortTransactions != 1 {
				t.Errorf("stored %d events in %d transactions (%d short of a row group), want %d in 1, short",
					st.Events, st.Batches, st.ShortTransactions, n)
			}
		})
	}
}

// TestLiveStreamPausesKeepRowGroups ingests a live stream from a real broker: 3,000 events
// published while ingestion runs, 10 every 5 ms (about 2,000 a second), with a pause of 300 ms
// after every 450, in batches of 100 and transactions of 3 (this test's row group, 300 rows).
// The pending counts of the broker's deliveries say that messages are being published, so no
// pause cuts a batch short: the events make 10 transactions of 300. With the quiet of a backlog
// (here 20 ms: a batch fills in about 50 ms) each pause ended the held transaction short of its
// row group, as 125 ms pauses did under the 20,000 events/s load (9 transactions of 52).
func TestLiveStreamPausesKeepRowGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes for about 3 s")
	}
	const n, batch, txn = 3000, 100, 3
	defer warehouse.SetRowGroupRows(batch * txn)()
	b := bustest.NewServer(t).Connect(t)
	msgs := benchMsgs(t, n)[:n]
	ctx := warehousetest.Context(t, 3*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(t.TempDir(), "live.duckdb"), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		// A BatchWait no gathering reaches on a loaded machine: only a quiet could cut a batch.
		done <- w.Ingest(ictx, b, warehouse.IngestConfig{BatchSize: batch, TxnBatches: txn, BatchWait: 5 * time.Second})
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < n; i += 10 {
		if i > 0 && i%450 == 0 {
			time.Sleep(300 * time.Millisecond)
		}
		<-tick.C
		warehousetest.Publish(t, b, msgs[i:i+10])
	}
	for w.Stats().Events < n {
		select {
		case err := <-done:
			t.Fatalf("ingestion ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("stored %d events of %d", w.Stats().Events, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Batches != n/(batch*txn) || st.ShortTransactions != 0 {
		t.Errorf("%d events in %d transactions (%d short of the row group), want %d of %d: a pause of the live stream ended a transaction short",
			st.Events, st.Batches, st.ShortTransactions, n/(batch*txn), batch*txn)
	}
}
