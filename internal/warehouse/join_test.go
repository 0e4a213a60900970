package warehouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// sampleBatches decodes the sample's events, as the decoder does, in fetched batches of size,
// each with the messages after it pending (a backlog).
func sampleBatches(t *testing.T, size int) []*batch {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n"))
	var out []*batch
	for i, line := range lines {
		if i%size == 0 {
			out = append(out, &batch{lag: uint64(max(len(lines)-i-size, 0))})
		}
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		subject, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		b := out[len(out)-1]
		b.items = append(b.items, &item{subject: subject, raw: line, streamSeq: uint64(i + 1)})
		b.bytes += len(line)
	}
	for _, b := range out {
		decodeBatch(b)
	}
	return out
}

// testIngester opens a database in a temporary directory and an ingester with cfg (its
// defaults filled in) on a connection of it; both close when the test ends.
func testIngester(t testing.TB, ctx context.Context, cfg IngestConfig) (*Warehouse, *ingester) {
	t.Helper()
	w, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "ingest.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	conn, err := w.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.withDefaults()
	ing := &ingester{w: w, cfg: cfg, conn: conn, tracker: newTracker(cfg.MaxOpenEvents)}
	t.Cleanup(func() { _ = ing.conn.Close() })
	return w, ing
}

// TestBatchesOneOpenTransaction stores fetched batches with a backlog in one transaction held
// open across them: each batch's record is loaded and let go as it comes, nothing is visible
// (or acknowledged) before the COMMIT after the last, every hook runs once per fetched batch,
// and the events are stored once. A failure before COMMIT leaves none of the batches stored
// and sends them back to be delivered again (errRestart), then stored one batch a transaction.
func TestBatchesOneOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := len(bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")))
	batches := (n + 24) / 25
	open := func(t *testing.T, hooks *Hooks) (*Warehouse, *ingester) {
		return testIngester(t, ctx, IngestConfig{BatchSize: 25, TxnBatches: batches, Hooks: hooks})
	}

	t.Run("one transaction", func(t *testing.T) {
		var fetched, before, after []int
		w, ing := open(t, &Hooks{
			AfterFetch:   func(n int) error { fetched = append(fetched, n); return nil },
			BeforeCommit: func(n int) error { before = append(before, n); return nil },
			AfterCommit:  func(n int) error { after = append(after, n); return nil },
		})
		var wm uint64
		for i, b := range sampleBatches(t, 25) {
			next, err := ing.commit(ctx, b, wm)
			if err != nil {
				t.Fatal(err)
			}
			if b.built != nil {
				t.Errorf("batch %d: its record is held after it was stored", i+1)
			}
			if i < batches-1 {
				pos, err := w.Position(ctx, "")
				if next != 0 || ing.txn.batches != i+1 || err != nil || pos.Watermark != 0 || pos.Events != 0 {
					t.Fatalf("after batch %d of %d: watermark %d, %d batches open, position %+v (%v); want 0, %d open, nothing visible",
						i+1, batches, next, ing.txn.batches, pos, err, i+1)
				}
			}
			wm = next
		}
		if ing.txn.batches != 0 || wm != uint64(n) {
			t.Fatalf("after the last batch: %d batches open, watermark %d; want committed at %d", ing.txn.batches, wm, n)
		}
		if len(fetched) != batches || fetched[0] != 1 || fetched[batches-1] != batches || !slices.Equal(before, fetched) || !slices.Equal(after, fetched) {
			t.Errorf("hooks ran for batches %v (after fetch), %v (before commit), %v (after commit); want 1..%d each", fetched, before, after, batches)
		}
		st := w.Stats()
		if st.Batches != 1 || st.Events == 0 || st.Events+st.Rejected+st.Duplicates != uint64(n) || st.Watermark != uint64(n) {
			t.Errorf("%d transactions stored %d events, %d rejected, %d duplicates, watermark %d; want 1 of %d messages in all",
				st.Batches, st.Events, st.Rejected, st.Duplicates, st.Watermark, n)
		}
		var stored int
		if err := w.db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&stored); err != nil || uint64(stored) != st.Events {
			t.Errorf("events table holds %d rows (%v), want %d", stored, err, st.Events)
		}
	})

	t.Run("failure before COMMIT", func(t *testing.T) {
		failed := false
		w, ing := open(t, &Hooks{BeforeCommit: func(n int) error {
			if n == 2 && !failed {
				failed = true
				return errors.New("disk hiccup")
			}
			return nil
		}})
		var err error
		for _, b := range sampleBatches(t, 25) {
			if _, err = ing.commit(ctx, b, 0); err != nil {
				break
			}
		}
		if !errors.Is(err, errRestart) || !failed {
			t.Fatalf("commit with batch 2 failing before COMMIT = %v (failed %v), want errRestart", err, failed)
		}
		pos, err := w.Position(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if pos.Watermark != 0 || pos.Events != 0 || ing.txn.batches != 0 {
			t.Errorf("a failure of batch 2 left watermark %d, %d events stored, %d batches open; want nothing of the transaction", pos.Watermark, pos.Events, ing.txn.batches)
		}
		// Delivered again (the consumer restarts from the watermark): one batch a transaction
		// until the watermark passes the failed transaction's messages.
		var wm uint64
		for i, b := range sampleBatches(t, 25) {
			if wm, err = ing.commit(ctx, b, wm); err != nil {
				t.Fatal(err)
			}
			if ing.txn.batches != 0 {
				t.Fatalf("batch %d delivered again after the failure left its transaction open", i+1)
			}
		}
		if st := w.Stats(); st.Batches != uint64(batches) || st.Watermark != uint64(n) || st.Events+st.Rejected+st.Duplicates != uint64(n) {
			t.Errorf("delivered again: %d transactions, watermark %d, %d messages stored; want %d, %d, %d", st.Batches, st.Watermark,
				st.Events+st.Rejected+st.Duplicates, batches, n, n)
		}
	})
}

// TestLateEventInOpenTransaction: an event of an attempt that finished in an earlier batch of
// the same open transaction (its run_folds row pending, not appended yet) refolds it from the
// events stored, as a late event of an attempt folded by an earlier transaction does: run_folds
// ends as it does when every event comes in one batch.
func TestLateEventInOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lines := bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n"))
	// The first run's second event arrives last, after its run.finished, in the last batch.
	late := slices.Clone(lines[1])
	lines = append(slices.Delete(slices.Clone(lines), 1, 2), late)
	var appendedWhileOpen int64 // the most run_fold_rows rows the open transaction had appended
	store := func(size int) []string {
		appendedWhileOpen = 0
		w, ing := testIngester(t, ctx, IngestConfig{BatchSize: size, TxnBatches: len(lines)})
		var err error
		var wm uint64
		for off := 0; off < len(lines); off += size {
			b := &batch{lag: uint64(max(len(lines)-off-size, 0))}
			for i := off; i < min(off+size, len(lines)); i++ {
				e, err := events.Decode(lines[i])
				if err != nil {
					t.Fatal(err)
				}
				subject, err := events.SubjectOf(&e)
				if err != nil {
					t.Fatal(err)
				}
				b.items = append(b.items, &item{subject: subject, raw: lines[i], streamSeq: uint64(i + 1)})
				b.bytes += len(lines[i])
			}
			decodeBatch(b)
			if wm, err = ing.commit(ctx, b, wm); err != nil {
				t.Fatal(err)
			}
			if ing.txn.open {
				var n int64
				if err := ing.conn.QueryRowContext(ctx, "SELECT count(*) FROM run_fold_rows").Scan(&n); err != nil {
					t.Fatal(err)
				}
				appendedWhileOpen = max(appendedWhileOpen, n)
			}
		}
		if ing.txn.open { // a last batch that filled keeps it open: no next batch comes
			if wm, err = ing.endOpen(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st := w.Stats(); st.Batches != 1 || wm != uint64(len(lines)) {
			t.Fatalf("batches of %d: %d transactions, watermark %d; want 1, %d", size, st.Batches, wm, len(lines))
		}
		rows, err := w.db.QueryContext(ctx, "SELECT * FROM run_folds ORDER BY study, run, attempt")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(vals...))
		}
		return out
	}
	want := store(len(lines))
	got := store(20)
	if appendedWhileOpen != 0 {
		t.Fatalf("%d run_folds rows appended before the COMMIT, with fewer than foldFlushRows (%d) pending", appendedWhileOpen, foldFlushRows)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("run_folds with the late event in a later batch of the transaction (%d rows):\n%.400s\nwant (one batch, %d rows):\n%.400s", len(got), first(got), len(want), first(want))
	}
	// The rows appended after every batch (foldFlushRows): the late event's attempt has its
	// row in run_fold_rows already, inside the open transaction, and is refolded from there.
	defer func(n int) { foldFlushRows = n }(foldFlushRows)
	foldFlushRows = 1
	got = store(20)
	if appendedWhileOpen == 0 {
		t.Error("no run_folds row appended while the transaction was open, with foldFlushRows 1")
	}
	if !slices.Equal(got, want) {
		t.Errorf("run_folds with the late event in a later batch of the transaction, rows appended every batch (%d rows):\n%.400s\nwant (one batch, %d rows):\n%.400s", len(got), first(got), len(want), first(want))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestFullBatchesKeepTransactionOpenWithoutBacklog: batches that filled keep the transaction
// open with nothing pending beyond them (a rate that fills a batch within BatchWait), up to
// TxnBatches, which then commit together, when they make a row group; a batch cut short (by
// BatchWait) commits at once, and so does a full one when they would not make a row group.
// Until 2026-12-04 a transaction stayed open only with messages pending beyond its batch, so
// under a steady load each batch went through DuckDB's WAL alone.
func TestFullBatchesKeepTransactionOpenWithoutBacklog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Three batches of 10 make this test's row group.
	defer func(n int) { rowGroupRows = n }(rowGroupRows)
	rowGroupRows = 30
	w, ing := testIngester(t, ctx, IngestConfig{BatchSize: 10, TxnBatches: 3})
	var err error
	batches := sampleBatches(t, 10)
	if len(batches) < 5 || len(batches[3].items) != 10 {
		t.Fatalf("the sample gives %d batches of 10: too few", len(batches))
	}
	// Batches 1-3 full, nothing pending beyond any; then a batch of 4 events cut by time.
	batches = batches[:4]
	batches[3].items = batches[3].items[:4]
	var wm uint64
	for i, b := range batches {
		b.lag = 0
		if wm, err = ing.commit(ctx, b, wm); err != nil {
			t.Fatal(err)
		}
		want := []uint64{0, 0, 1, 2}[i] // transactions committed after each batch
		if got := w.Stats().Batches; got != want {
			t.Fatalf("after batch %d (%d events, none pending): %d transactions committed, want %d", i+1, len(b.items), got, want)
		}
	}
	if wm != 34 || ing.txn.open {
		t.Errorf("watermark %d, transaction open %v; want 34, false", wm, ing.txn.open)
	}
	// Settings whose transaction is no row group (4 batches of 10) hold it only with a backlog.
	ing.cfg.TxnBatches = 4
	all := sampleBatches(t, 1000)[0] // every event of the sample, in stream order
	if len(all.items) < 44 {
		t.Fatalf("the sample has %d events: too few", len(all.items))
	}
	b := &batch{items: all.items[34:44]} // stream sequences 35..44, after the watermark
	for _, it := range b.items {
		b.bytes += len(it.raw)
	}
	if wm, err = ing.commit(ctx, b, wm); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Batches; got != 3 || ing.txn.open {
		t.Errorf("a full batch with nothing pending, 4 batches of 10 a transaction: %d transactions committed (open %v), want 3", got, ing.txn.open)
	}
}
