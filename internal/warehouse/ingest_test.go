package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// small makes batches and transactions small so that tests cross many batch and transaction
// boundaries (transactions of at most 4 batches, as the default was before it became a DuckDB
// row group's 12).
func small() warehouse.IngestConfig {
	return warehouse.IngestConfig{BatchSize: 37, TxnBatches: 4, BatchWait: 20 * time.Millisecond, AckWait: time.Second}
}

func testMsgs(t testing.TB) []msg {
	msgs := append(append(warehousetest.SampleMsgs(t), harnessStudy(t, "study1")...), contextStudy(t)...)
	return append(msgs, codingStudy(t, "code1")...)
}

func catchUp(t testing.TB, w *warehouse.Warehouse, b *bus.Bus, cfg warehouse.IngestConfig) {
	t.Helper()
	if err := w.CatchUp(warehousetest.Context(t, 60*time.Second), b, cfg); err != nil {
		t.Fatalf("CatchUp() = %v", err)
	}
}

// checkExact asserts that every event of msgs is stored exactly once.
func checkExact(t testing.TB, w *warehouse.Warehouse, msgs []msg) {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[m.ID] = true
	}
	db := w.DB()
	if n := warehousetest.Count(t, db, "SELECT count(*) FROM events"); n != int64(len(ids)) {
		t.Errorf("events holds %d rows, want %d", n, len(ids))
	}
	if n := warehousetest.Count(t, db, "SELECT count(DISTINCT id) FROM events"); n != int64(len(ids)) {
		t.Errorf("events holds %d distinct ids, want %d", n, len(ids))
	}
	if n := warehousetest.Count(t, db, "SELECT count(*) FROM (SELECT study, run, attempt FROM run_folds GROUP BY ALL HAVING count(*) > 1)"); n != 0 {
		t.Errorf("%d run attempts have more than one run_folds row", n)
	}
}

// duckdbOutOfMemory returns DuckDB's own out-of-memory error, from an in-memory database with
// a 1MB memory limit and nowhere to spill.
func duckdbOutOfMemory(t *testing.T) error {
	t.Helper()
	db, err := sql.Open("duckdb", "?memory_limit=1MB")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SET temp_directory = ''"); err != nil {
		t.Fatal(err)
	}
	var s string
	err = db.QueryRow("SELECT string_agg(range::VARCHAR, ',' ORDER BY range DESC) FROM range(2000000)").Scan(&s)
	var de *duckdb.Error
	if !errors.As(err, &de) || de.Type != duckdb.ErrorTypeOutOfMemory {
		t.Fatalf("a query beyond a 1MB memory limit = %v, want DuckDB's out-of-memory error", err)
	}
	return err
}

// TestOutOfMemoryNotUnstorable: DuckDB running out of memory in a transaction that holds a
// single message is the database's failure, not the message's. With batches of one message,
// batch 2's transaction fails, and so does its retry alone; the halving path then kept the
// message in rejected_events as unstorable (its reject row committed), a good event lost to a
// moment without memory. It must instead retry from the watermark and store the event.
func TestOutOfMemoryNotUnstorable(t *testing.T) {
	oom := duckdbOutOfMemory(t)
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)[:20]
	warehousetest.PublishFast(t, b, msgs)
	w := openWH(t, tempDB(t))
	cfg := small()
	cfg.BatchSize, cfg.TxnBatches = 1, 1
	failures := 0
	cfg.Hooks = &warehouse.Hooks{BeforeCommit: func(n int) error {
		if n == 2 && failures < 2 { // the batch's transaction, then the message alone
			failures++
			return oom
		}
		return nil
	}}
	catchUp(t, w, b, cfg)
	if failures != 2 {
		t.Fatalf("%d out-of-memory failures, want 2", failures)
	}
	checkExact(t, w, msgs)
	if n := warehousetest.Count(t, w.DB(), "SELECT count(*) FROM rejected_events"); n != 0 {
		t.Errorf("rejected_events holds %d rows after out-of-memory failures, want 0", n)
	}
}

func TestIngestProjection(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	warehousetest.Publish(t, b, msgs)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, small())
	checkExact(t, w, msgs)
	db := w.DB()
	tests := []struct {
		name  string
		query string
		want  int64
	}{
		{"sample runs", "SELECT count(*) FROM runs WHERE study = 'sample-prod' AND status IN ('succeeded', 'failed')", 24},
		{"production source", "SELECT count(*) FROM runs WHERE source_kind = 'production'", 24},
		{"study1 attempts", "SELECT count(*) FROM runs WHERE study = 'study1'", 8},
		{"aborted", "SELECT count(*) FROM runs WHERE study = 'study1' AND run = 'b-2' AND attempt = 1 AND status = 'aborted' AND NOT last_attempt", 1},
		{"incomplete", "SELECT count(*) FROM runs WHERE run = 'b-3' AND status = 'incomplete' AND last_attempt AND sig_trace IS NULL", 1},
		{"fold error", "SELECT count(*) FROM anomalies WHERE run = 'h-1' AND kind = 'fold_error' AND detail LIKE '%illegal transition%'", 1},
		{"check error", "SELECT count(*) FROM anomalies WHERE run = 'h-2' AND kind = 'check_error' AND detail LIKE 'prompt_tokens%'", 1},
		{"retry counted", "SELECT retries FROM runs WHERE run = 'b-2' AND attempt = 2", 1},
		{"states with retry", "SELECT len(states) FROM runs WHERE run = 'b-2' AND attempt = 2", 4},
		{"equal traces share a signature", "SELECT count(DISTINCT sig_trace) FROM runs WHERE run IN ('b-0', 'h-0')", 1},
		{"different args differ", "SELECT count(DISTINCT sig_calls) FROM runs WHERE run IN ('b-0', 'b-1')", 2},
		{"same tools", "SELECT count(DISTINCT sig_tools) FROM runs WHERE run IN ('b-0', 'b-1')", 1},
		{"tokens", "SELECT tokens FROM runs WHERE run = 'b-0'", 330},
		{"studies expected", "SELECT expected_runs FROM studies WHERE study = 'study1'", 7},
		// h-1's history is refused by the fold: incomplete, not finished.
		{"studies finished", "SELECT finished_runs FROM studies WHERE study = 'study1'", 5},
		{"studies production", "SELECT finished_runs FROM studies WHERE study = 'sample-prod' AND expected_runs IS NULL", 24},
		{"cells", "SELECT count(*) FROM cells WHERE study = 'study1'", 2},
		{"cell expected vs finished", "SELECT finished_runs FROM cells WHERE study = 'study1' AND condition = 'baseline' AND expected_runs = 4", 3},
		{"tool calls executed", "SELECT count(*) FROM tool_calls WHERE run = 'b-0' AND status = 'executed' AND ok", 3},
		{"transitions", "SELECT count(*) FROM transitions WHERE run = 'b-0' AND event = 'entered'", 3},
		{"validations", "SELECT count(*) FROM validations WHERE run = 'b-2' AND NOT valid", 1},
		{"model calls", "SELECT sum(tokens) FROM model_calls WHERE run = 'b-0'", 330},
		{"plans", "SELECT count(*) FROM plans WHERE run = 'b-0' AND kind = 'accepted'", 1},
		{"no rejects", "SELECT count(*) FROM rejected_events", 0},
		{"coding runs", "SELECT count(*) FROM coding_runs WHERE study = 'code1' AND repo = 'ledger'", 2},
		{"coding verifications", "SELECT verifications FROM coding_runs WHERE run = 'c-0'", 3},
		{"coding repair turns", "SELECT repair_turns FROM coding_runs WHERE run = 'c-0'", 1},
		{"coding re-patches", "SELECT repatches FROM coding_runs WHERE run = 'c-0'", 1},
		{"coding protected attempts", "SELECT protected_attempts FROM coding_runs WHERE run = 'c-0'", 1},
		{"coding verification ms", "SELECT verification_ms FROM coding_runs WHERE run = 'c-1'", 2100},
		{"coding fold clean", "SELECT count(*) FROM anomalies WHERE study = 'code1'", 0},
		{"runs: coding columns", "SELECT count(*) FROM runs WHERE run = 'c-0' AND verifications = 3 AND verification_ms = 2900 AND repair_turns = 1 AND repatches = 1 AND protected_attempts = 1", 1},
		{"runs: coding columns agree with coding_runs", `SELECT count(*) FROM runs r JOIN coding_runs c USING (study, run, attempt)
			WHERE (r.verifications, r.verification_ms, r.repair_turns, r.repatches, r.protected_attempts) =
			      (c.verifications, c.verification_ms, c.repair_turns, c.repatches, c.protected_attempts)`, 2},
		{"runs: no coding figures for other runs", "SELECT count(*) FROM runs WHERE study <> 'code1' AND (verifications IS NOT NULL OR repatches IS NOT NULL)", 0},
	}
	for _, tt := range tests {
		if got := warehousetest.Count(t, db, tt.query); got != tt.want {
			t.Errorf("%s: %s = %d, want %d", tt.name, tt.query, got, tt.want)
		}
	}
	checkSignatures(t, db, msgs)
}

// TestDuplicatePublishesAndResends checks the duplicates the broker drops and those it stores
// again (re-sent after its window), found by their ids: in batches of 37, each batch's stored
// ids are fewer than existingIDsFew and tested against the list row by row; in batches of 500,
// the 120 re-sent ids arrive together and are joined.
func TestDuplicatePublishesAndResends(t *testing.T) {
	for _, batch := range []int{37, 500} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			cfg := small()
			cfg.BatchSize = batch
			b := bustest.NewServer(t).Connect(t)
			msgs := testMsgs(t)
			warehousetest.Publish(t, b, msgs)
			warehousetest.Publish(t, b, msgs[:50]) // within the duplicate window: the broker drops them
			// The same events re-sent after the window: new msg ids, so the broker stores them again.
			var resent []msg
			for i, m := range msgs[:120] {
				resent = append(resent, msg{Subject: m.Subject, ID: fmt.Sprintf("later-%d", i), Data: m.Data})
			}
			w := openWH(t, tempDB(t))
			if batch > warehouse.ExistingIDsFew {
				// Stored before the re-sent ones arrive, so that these are found among the
				// stored ids (not as repeats within a batch), all 120 in one batch.
				catchUp(t, w, b, cfg)
			}
			warehousetest.Publish(t, b, resent)
			catchUp(t, w, b, cfg)
			checkExact(t, w, msgs)
			if s := w.Stats(); s.Duplicates != 120 {
				t.Errorf("Stats().Duplicates = %d, want 120", s.Duplicates)
			}
			pos, _ := w.Position(warehousetest.Context(t, 5*time.Second), "")
			if pos.Watermark != uint64(len(msgs)+120) || pos.Duplicates != 120 {
				t.Errorf("Position() = %+v, want watermark %d and 120 duplicates", pos, len(msgs)+120)
			}
			// The re-sent ones arrive together in one later batch as well as spread: resend inside one batch.
			warehousetest.Publish(t, b, append(resent[:0:0], msg{Subject: msgs[0].Subject, ID: "again-1", Data: msgs[0].Data}, msg{Subject: msgs[0].Subject, ID: "again-2", Data: msgs[0].Data}))
			catchUp(t, w, b, cfg)
			checkExact(t, w, msgs)
		})
	}
}

// TestOutOfOrderIDsNotLookedUp: events whose ids arrive below the largest stored id (runs
// interleaved, each stamped ahead of its publishing, as the load generator's and production
// traces' are) are known to be new from the window of recently stored ids: only the first such
// batch, which starts the window, looks them up among the stored ones. Re-sent events in the
// window still are looked up, and found. Events in id order are never looked up.
func TestOutOfOrderIDsNotLookedUp(t *testing.T) {
	msgs := testMsgs(t)
	sorted := slices.SortedFunc(slices.Values(msgs), func(a, b msg) int { return strings.Compare(a.ID, b.ID) })
	b0 := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b0, sorted)
	w0 := openWH(t, tempDB(t))
	catchUp(t, w0, b0, small())
	checkExact(t, w0, msgs)
	if s := w0.Stats(); s.IDLookups != 0 {
		t.Errorf("Stats().IDLookups = %d after %d events in id order, want 0", s.IDLookups, len(sorted))
	}
	order := slices.Clone(msgs)
	for i := 0; i+10 <= len(order); i += 10 {
		slices.Reverse(order[i : i+10])
	}
	below, top := 0, ""
	for _, m := range order {
		if m.ID < top {
			below++
		}
		top = max(top, m.ID)
	}
	if below < len(order)/2 {
		t.Fatalf("%d of %d ids arrive below the largest before them, want most", below, len(order))
	}
	var resent []msg
	// From the middle of the stream: stored after the window started, so found through its
	// hashes, not because they are older than it.
	for i, m := range order[len(order)/2 : len(order)/2+20] {
		resent = append(resent, msg{Subject: m.Subject, ID: fmt.Sprintf("later-%d", i), Data: m.Data})
	}
	b := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b, order)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, small())
	checkExact(t, w, msgs)
	// One lookup: the first batch with ids below the largest stored one, which starts the window
	// (two if that batch was cut short and the next holds ids older than the window).
	if s := w.Stats(); s.IDLookups == 0 || s.IDLookups > 2 {
		t.Errorf("Stats().IDLookups = %d after %d events, %d of them below the largest id stored before them, want 1 or 2",
			s.IDLookups, len(order), below)
	}
	// The same ingester (one CatchUp) stores the rest of a stream and then meets re-sent events.
	b2 := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b2, order)
	warehousetest.Publish(t, b2, resent)
	w2 := openWH(t, tempDB(t))
	reg := prometheus.NewRegistry()
	reg.MustRegister(w2.Collectors()...)
	catchUp(t, w2, b2, small())
	checkExact(t, w2, msgs)
	s := w2.Stats()
	if s.Duplicates != uint64(len(resent)) || s.IDLookups == 0 {
		t.Errorf("Stats() = %d duplicates in %d lookups, want %d in at least one", s.Duplicates, s.IDLookups, len(resent))
	}
	// The same count in /metrics.
	if counted := gathered(t, reg, "ditto_analyzer_id_lookups_total"); counted != float64(s.IDLookups) {
		t.Errorf("ditto_analyzer_id_lookups_total = %v, want %d", counted, s.IDLookups)
	}
}

func TestRedeliveriesStoredOnce(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	warehousetest.Publish(t, b, msgs)
	w := openWH(t, tempDB(t))
	cfg := small()
	// Every ack is lost until the broker redelivers (after AckWait): acks are cumulative, so
	// losing only some would be repaired by the next one.
	cfg.Hooks = &warehouse.Hooks{SkipAck: func(int) bool { return w.Stats().Redelivered == 0 }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, cfg) }()
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Redelivered == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if w.Stats().Redelivered == 0 {
		t.Fatal("no redelivery seen within 30s")
	}
	catchUpWhileRunning(t, w, uint64(len(msgs)))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Ingest() after cancel = %v, want nil", err)
	}
	checkExact(t, w, msgs)
}

// catchUpWhileRunning polls until the watermark reaches want.
func catchUpWhileRunning(t testing.TB, w *warehouse.Warehouse, want uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Watermark < want {
		if time.Now().After(deadline) {
			t.Fatalf("watermark %d after 30s, want %d", w.Stats().Watermark, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCrashAndRestart(t *testing.T) {
	stop := errors.New("crash")
	tests := []struct {
		name  string
		hooks func(at int) *warehouse.Hooks
	}{
		{"between fetch and commit", func(at int) *warehouse.Hooks {
			return &warehouse.Hooks{AfterFetch: func(n int) error {
				if n == at {
					return stop
				}
				return nil
			}}
		}},
		{"between commit and ack", func(at int) *warehouse.Hooks {
			return &warehouse.Hooks{AfterCommit: func(n int) error {
				if n == at {
					return stop
				}
				return nil
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bustest.NewServer(t).Connect(t)
			msgs := testMsgs(t)
			warehousetest.PublishFast(t, b, msgs) // arrival order differs from seq order within runs
			path := tempDB(t)
			for _, at := range []int{1, 3, 7} {
				w, err := warehouse.Open(warehousetest.Context(t, 2*time.Minute), warehouse.Config{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				cfg := small()
				cfg.Hooks = tt.hooks(at)
				err = w.CatchUp(warehousetest.Context(t, 30*time.Second), b, cfg)
				if !errors.Is(err, warehouse.ErrHook) {
					t.Fatalf("CatchUp() with a crash at batch %d = %v, want ErrHook", at, err)
				}
				w.Close() // the process dies: nothing more is acked
			}
			w := openWH(t, path)
			catchUp(t, w, b, small())
			checkExact(t, w, msgs)
			if n := warehousetest.Count(t, w.DB(), "SELECT count(*) FROM runs WHERE study = 'study1' AND status <> 'incomplete'"); n != 6 {
				t.Errorf("finished study1 attempts = %d, want 6 (h-1's history is refused: incomplete)", n)
			}
		})
	}
}

func TestPoisonMessages(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	good := warehousetest.SampleMsgs(t)[:30]
	e, _ := events.Decode(good[3].Data)
	unknown := []byte(strings.Replace(string(good[3].Data), `"type":"`+string(e.Type)+`"`, `"type":"model.pondered"`, 1))
	e.ID = "01WRONGSUBJECT"
	wrongSubject := warehousetest.EnvelopeMsg(t, &e)
	wrongSubject.Subject = "ditto.events.sample-prod.other-run.model.called"
	poison := []struct {
		m     msg
		class string
	}{
		{msg{Subject: "ditto.events.s.r.x", ID: "p1", Data: []byte("not json at all")}, "malformed"},
		{msg{Subject: "ditto.events.s.r.x", ID: "p2", Data: []byte(`{"schema":1,"id":"x","type":"run.started","payload":{}}`)}, "invalid"},
		{msg{Subject: good[3].Subject, ID: "p3", Data: unknown}, "unknown_type"},
		{wrongSubject, "subject_mismatch"},
		{msg{Subject: "ditto.events.s.r.x", ID: "p5", Data: []byte(`{"schema":99,"id":"y","type":"run.started","payload":{"task":"t"}}`)}, "unknown_version"},
	}
	var all []msg
	for i, m := range good {
		all = append(all, m)
		if i%6 == 5 {
			all = append(all, poison[i/6].m)
		}
	}
	warehousetest.Publish(t, b, all)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 4, BatchWait: 20 * time.Millisecond, AckWait: time.Second})
	checkExact(t, w, good)
	rows, err := w.DB().Query("SELECT subject, error_class, reason, raw FROM rejected_events ORDER BY stream_seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var subject, class, reason string
		var raw []byte
		if err := rows.Scan(&subject, &class, &reason, &raw); err != nil {
			t.Fatal(err)
		}
		if i >= len(poison) {
			continue
		}
		p := poison[i]
		if subject != p.m.Subject || class != p.class || reason == "" || string(raw) != string(p.m.Data) {
			t.Errorf("rejected[%d] = (%s, %s, %q), want subject %s class %s with the raw bytes and a reason", i, subject, class, reason, p.m.Subject, p.class)
		}
	}
	if i != len(poison) {
		t.Errorf("rejected_events has %d rows, want %d", i, len(poison))
	}
	// Nothing is left for redelivery: the poison messages were terminated, the rest acked.
	s, err := b.Stream(warehousetest.Context(t, 5*time.Second), events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.ConsumerInfo(warehousetest.Context(t, 5*time.Second), events.AnalyzerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.AckFloor.Stream != uint64(len(all)) {
		t.Errorf("consumer ack floor %d, pending %d; want %d and 0", info.AckFloor.Stream, info.NumAckPending, len(all))
	}
}

func TestRebuildYieldsIdenticalTables(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	warehousetest.PublishFast(t, b, msgs)
	// A few re-sent events and a poison message, so that every table has content.
	warehousetest.Publish(t, b, []msg{{Subject: msgs[5].Subject, ID: "resent-5", Data: msgs[5].Data}, {Subject: "ditto.events.x.y.z", ID: "bad", Data: []byte("{")}})
	live := openWH(t, tempDB(t))
	cfg := small()
	cfg.BatchSize = 13
	catchUp(t, live, b, cfg)

	path := tempDB(t)
	if err := warehouse.Rebuild(warehousetest.Context(t, 60*time.Second), b, path, warehouse.IngestConfig{}); err != nil {
		t.Fatalf("Rebuild() = %v", err)
	}
	if err := warehouse.Rebuild(warehousetest.Context(t, 2*time.Minute), b, path, warehouse.IngestConfig{}); !errors.Is(err, warehouse.ErrExists) {
		t.Errorf("Rebuild(existing file) = %v, want ErrExists", err)
	}
	checkSameTables(t, live, "live", openWH(t, path), "rebuilt")
}

// checkSameTables asserts that every table of the projection, and ingest_state, holds the same
// rows in a as in b, and some.
func checkSameTables(t *testing.T, a *warehouse.Warehouse, aName string, b *warehouse.Warehouse, bName string) {
	t.Helper()
	for _, table := range append(warehouse.Tables(), "ingest_state") {
		ra, rb := warehousetest.Dump(t, a.DB(), table), warehousetest.Dump(t, b.DB(), table)
		if len(ra) == 0 {
			t.Errorf("%s is empty", table)
		}
		if !slices.Equal(ra, rb) {
			t.Errorf("%s differs: %d rows %s, %d %s\nfirst %s: %.300s\nfirst %s: %.300s",
				table, len(ra), aName, len(rb), bName, aName, first(ra), bName, first(rb))
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func TestFailedCommitsRetried(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	warehousetest.PublishFast(t, b, msgs)
	w := openWH(t, tempDB(t))
	cfg := small()
	failures := 0
	cfg.Hooks = &warehouse.Hooks{BeforeCommit: func(n int) error {
		if n >= 2 && failures < 4 { // four failures in a row, then it heals
			failures++
			return errors.New("disk hiccup")
		}
		return nil
	}}
	catchUp(t, w, b, cfg)
	checkExact(t, w, msgs)
	if failures != 4 {
		t.Errorf("%d failed commits, want 4", failures)
	}

	// A failure that does not heal stops ingestion with ErrCommit.
	warehousetest.Publish(t, b, []msg{{Subject: "ditto.events.x.y.z", ID: "one-more", Data: []byte("{")}})
	cfg.Hooks = &warehouse.Hooks{BeforeCommit: func(int) error { return errors.New("disk full") }}
	if err := w.CatchUp(warehousetest.Context(t, 60*time.Second), b, cfg); !errors.Is(err, warehouse.ErrCommit) {
		t.Errorf("CatchUp() with every commit failing = %v, want ErrCommit", err)
	}
	checkExact(t, w, msgs)
}
