package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// With ReattachEvents, ingestion detaches and attaches the database again after checkpoints,
// between transactions; every table then holds what ingestion without it stores, each event once.
func TestReattachKeepsIngestionExact(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := append(testMsgs(t), chunkMsgs(t, 0, 6000)...)
	warehousetest.PublishFast(t, b, msgs)
	// A re-sent event and a poison message, so that every table has content.
	warehousetest.Publish(t, b, []msg{{Subject: msgs[5].Subject, ID: "resent-5", Data: msgs[5].Data}, {Subject: "ditto.events.x.y.z", ID: "bad", Data: []byte("{")}})

	ingestInto := func(reattach int64) *warehouse.Warehouse {
		w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: tempDB(t), CheckpointThreshold: "256KB"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		cfg := warehouse.IngestConfig{Durable: "reattach" + map[bool]string{true: "on", false: "off"}[reattach > 0],
			BatchSize: 500, TxnBatches: 1, BatchWait: 50 * time.Millisecond, ReattachEvents: reattach}
		catchUp(t, w, b, cfg)
		return w
	}
	plain, re := ingestInto(0), ingestInto(1000)
	if n := plain.Stats().Reattaches; n != 0 {
		t.Errorf("%d reattaches with ReattachEvents 0, want none", n)
	}
	// Checkpoints come every few transactions of 500 events at a 256KB threshold: a reattach
	// follows the first after 1000 events.
	if n := re.Stats().Reattaches; n < 2 {
		t.Fatalf("%d reattaches ingesting %d events with ReattachEvents 1000 at a 256KB checkpoint threshold, want several", n, len(msgs))
	}
	checkExact(t, re, msgs)
	checkSameTables(t, plain, "without reattaches", re, "with")
	// The database attached again is the file's: closed and opened, it holds every event.
	path := re.Path()
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
	again := openWH(t, path)
	checkExact(t, again, msgs)
}

// A transaction begun before the detach holds the old database, and DuckDB refuses to attach the
// file again until it ends: reattach waits for it, and when it waits longer than it may, the
// warehouse stays detached until ensureAttached (the next session) attaches it.
func TestReattachWaitsForAnOpenTransaction(t *testing.T) {
	ctx := warehousetest.Context(t, 60*time.Second)
	w := openWH(t, tempDB(t))
	reader := conn(t, w)
	own := conn(t, w)
	begin := func() {
		t.Helper()
		if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}

	begin()
	commitAfter := 300 * time.Millisecond
	go func() {
		time.Sleep(commitAfter)
		_, _ = reader.ExecContext(ctx, "COMMIT")
	}()
	start := time.Now()
	if err := warehouse.Reattach(ctx, w, own); err != nil {
		t.Fatalf("reattach while a transaction holds the database: %v", err)
	}
	if took := time.Since(start); took < commitAfter/2 {
		t.Errorf("reattach took %v while a transaction held the database for %v: it did not wait", took, commitAfter)
	}
	countOn(t, ctx, own)
	countOn(t, ctx, conn(t, w))

	// Held for longer than the attach may wait: an error, and the database detached.
	begin()
	defer warehouse.SetAttachWait(warehouse.SetAttachWait(50 * time.Millisecond))
	err := warehouse.Reattach(ctx, w, own)
	if !errors.Is(err, warehouse.ErrCommit) {
		t.Fatalf("reattach while a transaction holds the database beyond the wait: %v, want ErrCommit", err)
	}
	if _, err := reader.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := warehouse.EnsureAttached(ctx, w, own); err != nil {
		t.Fatalf("ensureAttached once the transaction ended: %v", err)
	}
	countOn(t, ctx, own)
	countOn(t, ctx, conn(t, w))
}

// When ingestion's reattach cannot attach the database again in time (a reader's transaction
// holds the old one), nothing of the next batch is taken: the session starts again from the
// watermark, for as long as the database stays held (more times than the commit failures that
// stop Ingest), attaches it once the reader is done, and stores every event once.
func TestReattachFailureRestartsTheSession(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := chunkMsgs(t, 0, 3000)
	warehousetest.PublishFast(t, b, msgs)
	ctx := warehousetest.Context(t, 2*time.Minute)
	w := openCheckpointingEveryCommit(t, ctx)
	defer warehouse.SetAttachWait(warehouse.SetAttachWait(50 * time.Millisecond))
	// The reader's connection is not counted by the gate (as a connection of the ingester's
	// would not be): a counted one puts the reattach off instead
	// (TestReattachWaitsForTheDatabasesUsers).
	reader := exemptConn(t, w)
	const restarts = warehouse.MaxCommitFailures + 1
	held := make(chan error, 1)
	cfg := warehouse.IngestConfig{BatchSize: 500, TxnBatches: 1, BatchWait: 50 * time.Millisecond, ReattachEvents: 1,
		Hooks: &warehouse.Hooks{AfterCommit: func(n int) error {
			if n != 2 {
				return nil
			}
			// A reader's transaction, begun now, holds the database through the next reattach
			// until the sessions have started again that many times.
			if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
				return err
			}
			var c int64
			if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&c); err != nil {
				return err
			}
			go func() {
				for w.Stats().Restarts < restarts && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				_, err := reader.ExecContext(ctx, "COMMIT")
				held <- err
			}()
			return nil
		}}}
	catchUp(t, w, b, cfg)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	checkExact(t, w, msgs)
	s := w.Stats()
	if s.Reattaches < 3 {
		t.Errorf("%d reattaches, want one after every transaction's checkpoint", s.Reattaches)
	}
	if s.Restarts < restarts {
		t.Errorf("%d sessions restarted, want %d: the reattach held by the reader's transaction did not fail", s.Restarts, restarts)
	}
}

// exemptConn is a connection of w's that the gate does not count.
func exemptConn(t *testing.T, w *warehouse.Warehouse) *sql.Conn {
	t.Helper()
	c, err := w.DB().Conn(warehouse.ExemptFromGate(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func conn(t *testing.T, w *warehouse.Warehouse) *sql.Conn {
	t.Helper()
	c, err := w.DB().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func countOn(t *testing.T, ctx context.Context, c *sql.Conn) {
	t.Helper()
	var n int64
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Errorf("query after the reattach: %v", err)
	}
}

// The memory DuckDB keeps in the heap for the row groups appended (reattach.go) is returned by a
// reattach, and not by a checkpoint.
func TestReattachReturnsRowGroupMemory(t *testing.T) {
	ctx := warehousetest.Context(t, 2*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t), MemoryLimit: "256MB", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Memory(ctx).MallocInUse == 0 {
		t.Skip("this build cannot read glibc's heap (no cgo)")
	}
	c := conn(t, w)
	exec := func(q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A table of twenty columns beside the warehouse's own: DuckDB's memory for a row group is
	// one description of each column's segments.
	exec(`CREATE TABLE filler AS SELECT range AS c0, range::VARCHAR AS c1, range * 0.5 AS c2, range % 7 AS c3,
		'x' || (range % 1000)::VARCHAR AS c4, range + 1 AS c5, range + 2 AS c6, range + 3 AS c7, range + 4 AS c8, range + 5 AS c9,
		range::VARCHAR || 'a' AS c10, range + 6 AS c11, range + 7 AS c12, range + 8 AS c13, range + 9 AS c14, range + 10 AS c15,
		range % 11 AS c16, range % 13 AS c17, range % 17 AS c18, range % 19 AS c19 FROM range(0)`)
	insert := func(rowGroups int) {
		t.Helper()
		exec(fmt.Sprintf(`INSERT INTO filler SELECT range AS c0, range::VARCHAR, range * 0.5, range %% 7, 'x' || (range %% 1000)::VARCHAR,
			range + 1, range + 2, range + 3, range + 4, range + 5, range::VARCHAR || 'a', range + 6, range + 7, range + 8, range + 9,
			range + 10, range %% 11, range %% 13, range %% 17, range %% 19 FROM range(%d)`, rowGroups*122880))
	}
	// What the first appends and the first reattach allocate for good (caches, the stand-in
	// database, DuckDB's first description of the table) is in the baseline: a round like the
	// one measured.
	const rowGroups = 24
	insert(rowGroups)
	exec("CHECKPOINT")
	if err := warehouse.Reattach(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	before := w.Memory(ctx).MallocInUse
	insert(rowGroups)
	exec("CHECKPOINT")
	appended := w.Memory(ctx).MallocInUse
	if err := warehouse.Reattach(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	after := w.Memory(ctx).MallocInUse
	grew, freed := int64(appended)-int64(before), int64(appended)-int64(after)
	t.Logf("glibc heap in use: %.1f MiB, %.1f MiB after %d row groups appended and a checkpoint, %.1f MiB after the reattach",
		mib(before), mib(appended), rowGroups, mib(after))
	// About 100 KB a row group of events; the filler's twenty narrow columns hold about half.
	if grew < rowGroups*20<<10 {
		t.Fatalf("the heap grew by %d bytes for %d row groups: too little to measure what a reattach returns", grew, rowGroups)
	}
	// DuckDB reads part of it back when it attaches the file (about a fifth here: what describes
	// where each row group is stored).
	if freed < grew*2/3 {
		t.Errorf("the reattach returned %d of the %d bytes the heap grew by over %d row groups, want at least two thirds", freed, grew, rowGroups)
	}
	if n, want := warehousetest.Count(t, w.DB(), "SELECT count(*) FROM filler"), int64(2*rowGroups)*122880; n != want {
		t.Errorf("filler holds %d rows after the reattach, want %d", n, want)
	}
}
