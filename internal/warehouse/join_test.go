package warehouse

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// sampleBatches decodes the sample's events, as the decoder does, in fetched batches of size.
func sampleBatches(t *testing.T, size int) []*batch {
	t.Helper()
	var out []*batch
	for i, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		if i%size == 0 {
			out = append(out, &batch{fetched: 1})
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
	}
	for _, b := range out {
		decodeBatch(b)
	}
	return out
}

func TestGatherJoinsWaitingBatches(t *testing.T) {
	bs := sampleBatches(t, 10)
	ing := &ingester{cfg: IngestConfig{TxnBatches: 3}.withDefaults()}
	ch := make(chan *batch, 10)
	for _, b := range bs[1:5] {
		ch <- b
	}
	first := bs[0]
	var want []*item
	for _, b := range bs[:3] {
		want = append(want, b.items...)
	}
	defer func() {
		for _, b := range bs {
			b.release()
		}
	}()
	held, closed := ing.gather(first, ch)
	if held != nil || closed {
		t.Fatalf("gather = %v, %v; want nothing held, open", held, closed)
	}
	if first.fetched != 3 || len(first.built) != 3 || len(first.items) != 30 || len(ch) != 2 {
		t.Fatalf("joined %d batches (%d records, %d items), %d left waiting; want 3 (3, 30), 2", first.fetched, len(first.built), len(first.items), len(ch))
	}
	if !slices.Equal(first.items, want) {
		t.Error("joined items are not the three batches' items in order")
	}

	// Nothing waiting: the batch commits alone. An idle batch is handed back; a closed channel
	// is reported.
	next := <-ch
	if held, closed := ing.gather(next, make(chan *batch)); held != nil || closed || next.fetched != 1 {
		t.Errorf("gather with nothing waiting joined %d batches (held %v, closed %v)", next.fetched, held, closed)
	}
	idle := &batch{idle: true, fetched: 1}
	ch2 := make(chan *batch, 2)
	ch2 <- idle
	if held, _ := ing.gather(next, ch2); held != idle || next.fetched != 1 {
		t.Errorf("gather took an idle batch into a transaction (held %v, joined %d)", held, next.fetched)
	}
	close(ch2)
	if _, closed := ing.gather(next, ch2); !closed {
		t.Error("gather did not report the closed channel")
	}
}

// TestJoinedBatchesOneTransaction commits fetched batches joined into one transaction: every
// hook runs once per fetched batch, the events are stored once, the records the decoder built
// are the ones loaded; and a failure before COMMIT of one of them leaves none stored, since
// they are one transaction.
func TestJoinedBatchesOneTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(t *testing.T, failAt int) (*Warehouse, []int, []int, error) {
		w, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "j.duckdb")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		conn, err := w.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var fetched, before []int
		cfg := IngestConfig{Hooks: &Hooks{
			AfterFetch: func(n int) error { fetched = append(fetched, n); return nil },
			BeforeCommit: func(n int) error {
				before = append(before, n)
				if n == failAt {
					return errors.New("disk hiccup")
				}
				return nil
			},
		}}.withDefaults()
		ing := &ingester{w: w, cfg: cfg, conn: conn, tracker: newTracker(cfg.MaxOpenEvents)}
		defer func() { _ = ing.conn.Close() }()
		bs := sampleBatches(t, 25)
		all := bs[0]
		for _, b := range bs[1:] {
			all.join(b)
		}
		defer all.release()
		_, err = ing.commit(ctx, all, 0)
		return w, fetched, before, err
	}
	n := len(bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")))
	batches := (n + 24) / 25
	w, fetched, before, err := run(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(fetched) != batches || fetched[0] != 1 || fetched[batches-1] != batches || !slices.Equal(before, fetched) {
		t.Errorf("hooks ran for batches %v (after fetch) and %v (before commit), want 1..%d each", fetched, before, batches)
	}
	st := w.Stats()
	if st.Events == 0 || st.Events+st.Rejected+st.Duplicates != uint64(n) || st.Watermark != uint64(n) {
		t.Errorf("stored %d events, %d rejected, %d duplicates, watermark %d; want %d messages in all", st.Events, st.Rejected, st.Duplicates, st.Watermark, n)
	}
	var stored int
	if err := w.db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&stored); err != nil || uint64(stored) != st.Events {
		t.Errorf("events table holds %d rows (%v), want %d", stored, err, st.Events)
	}

	w, _, _, err = run(t, 2)
	if !errors.Is(err, ErrCommit) {
		t.Fatalf("commit with batch 2 failing before COMMIT = %v, want ErrCommit", err)
	}
	pos, err := w.Position(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if pos.Watermark != 0 || pos.Events != 0 {
		t.Errorf("a failure of batch 2 left watermark %d and %d events stored; want nothing of the transaction", pos.Watermark, pos.Events)
	}
}
