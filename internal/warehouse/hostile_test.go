package warehouse_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
	_ "github.com/duckdb/duckdb-go/v2"
)

// surrogateEvent is the event of the reproduction: valid JSON whose payload holds a
// lone surrogate escape. encoding/json reads it; DuckDB's JSON refuses it.
const surrogateEvent = `{"schema":1,"id":"01REPROSURROGATE0000000001","type":"run.started","time":"2026-12-01T07:35:00Z","study":"s1","run":"r1","attempt":1,"seq":1,"source":{"kind":"production","id":"x"},"payload":{"task":"t","model":"m\ud800x","condition":"c"}}`

// TestHostileMessagesDoNotStopIngestion publishes, straight to the stream (no validation on
// the way), messages that each stopped the analyzer for good: every retry of the batch failed
// in DuckDB, ingestion exited with ErrCommit, and a restart failed on the same message. Each
// must land in rejected_events, with the events around it stored and nothing left unacked.
func TestHostileMessagesDoNotStopIngestion(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	good := warehousetest.SampleMsgs(t)[:40]
	hostile := []struct {
		name    string
		m       msg
		class   string
		subject string // as stored: VARCHAR takes only UTF-8
		msgID   string
	}{
		{"lone surrogate in the payload", msg{Subject: "ditto.events.s1.r1.run.started", ID: "01REPROSURROGATE0000000001", Data: []byte(surrogateEvent)},
			"malformed", "ditto.events.s1.r1.run.started", "01REPROSURROGATE0000000001"},
		{"bytes that are not UTF-8 in the payload", msg{Subject: "ditto.events.s1.r2.run.started", ID: "h2", Data: []byte(strings.Replace(strings.Replace(surrogateEvent, `\ud800`, "\xff\xfe", 1), `"r1"`, `"r2"`, 1))},
			"malformed", "ditto.events.s1.r2.run.started", "h2"},
		{"subject that is not UTF-8", msg{Subject: "ditto.events.s1.r3.\xff", ID: "h3", Data: []byte("{")},
			"malformed", `ditto.events.s1.r3.\xff`, "h3"},
		{"Nats-Msg-Id that is not UTF-8", msg{Subject: "ditto.events.s1.r4.x", ID: "h4\xc3", Data: []byte("{")},
			"malformed", "ditto.events.s1.r4.x", `h4\xc3`},
		{"empty body", msg{Subject: "ditto.events.s1.r5.x", ID: "h5"}, "malformed", "ditto.events.s1.r5.x", "h5"},
	}
	var all []msg
	for i, m := range good {
		all = append(all, m)
		if i%8 == 3 {
			all = append(all, hostile[i/8].m)
		}
	}
	warehousetest.Publish(t, b, all)
	path := tempDB(t)
	w := openWH(t, path)
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 16, BatchWait: 20 * time.Millisecond, AckWait: time.Second})
	checkExact(t, w, good)
	checkRejected(t, w.DB(), len(hostile), func(i int, subject, msgID, class, reason string, raw []byte) {
		h := hostile[i]
		if subject != h.subject || msgID != h.msgID || class != h.class || reason == "" || string(raw) != string(h.m.Data) {
			t.Errorf("rejected[%d] (%s) = (%q, %q, %s, %q, %q), want (%q, %q, %s) with a reason and the raw bytes",
				i, h.name, subject, msgID, class, reason, raw, h.subject, h.msgID, h.class)
		}
	})
	checkAllAcked(t, b, uint64(len(all)))

	// A restart reads on from the watermark; the same stream rebuilt into a fresh database
	// goes past them too.
	w.Close()
	if err := warehouse.Rebuild(warehousetest.Context(t, 60*time.Second), b, tempDB(t), warehouse.IngestConfig{}); err != nil {
		t.Errorf("Rebuild() = %v, want nil", err)
	}
}

// TestEventDuckDBRefusesIsRejected: an event that decodes and is valid, which DuckDB refuses
// to store, is kept in rejected_events (class unstorable, DuckDB's reason) and ingestion goes
// on with the events before and after it in the same batch stored. DuckDB refuses it for real:
// the database is created beforehand with a CHECK constraint on the events table that one
// event breaks. In a transaction of several batches (a backlog of small batches) the failed
// transaction's messages, let go, are delivered again and stored one batch a transaction, so
// that the refused one is found in its batch: every other message is stored.
func TestEventDuckDBRefusesIsRejected(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  warehouse.IngestConfig
	}{
		{"one batch", warehouse.IngestConfig{BatchSize: 64, BatchWait: 50 * time.Millisecond, AckWait: time.Second}},
		{"transaction of several batches", warehouse.IngestConfig{BatchSize: 8, TxnBatches: 8, BatchWait: time.Second, AckWait: 5 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := testEventDuckDBRefuses(t, tt.cfg)
			if several := tt.cfg.TxnBatches > 1; several && w.Stats().Restarts == 0 {
				t.Error("no consumer restart: the refused message's transaction did not hold several batches")
			}
		})
	}
}

func testEventDuckDBRefuses(t *testing.T, cfg warehouse.IngestConfig) *warehouse.Warehouse {
	b := bustest.NewServer(t).Connect(t)
	good := warehousetest.SampleMsgs(t)[:60]
	e, err := events.Decode(good[20].Data)
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Source.ID = "01REFUSEDBYDUCKDB", "refuse-me"
	refused := warehousetest.EnvelopeMsg(t, &e)
	all := append(append(append([]msg{}, good[:30]...), refused), good[30:]...)
	warehousetest.Publish(t, b, all)

	path := tempDB(t)
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	ddl := queries.TableEvents.SQL
	constrained := strings.Replace(ddl, "payload        JSON        NOT NULL\n", "payload        JSON        NOT NULL,\n    CHECK (source_id <> 'refuse-me')\n", 1)
	if constrained == ddl {
		t.Fatal("the events DDL changed: update the CHECK constraint this test adds")
	}
	if _, err := db.Exec(constrained); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// The refused message is terminated with its reason, like a message that does not decode
	// (the ingester let its client message go once decoded: it is terminated by reply subject).
	terminated, err := b.Conn().SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + events.EventsStream + "." + events.AnalyzerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	w := openWH(t, path)
	catchUp(t, w, b, cfg)
	checkExact(t, w, good)
	var adv struct {
		StreamSeq uint64 `json:"stream_seq"`
		Reason    string `json:"reason"`
	}
	if m, err := terminated.NextMsg(10 * time.Second); err != nil {
		t.Errorf("the refused message was not terminated: %v", err)
	} else if json.Unmarshal(m.Data, &adv) != nil || adv.StreamSeq != 31 || !strings.Contains(adv.Reason, "DuckDB refused") {
		t.Errorf("termination advisory %s, want stream sequence 31 with DuckDB's refusal as the reason", m.Data)
	}
	checkRejected(t, w.DB(), 1, func(_ int, subject, msgID, class, reason string, raw []byte) {
		if subject != refused.Subject || msgID != refused.ID || class != "unstorable" || !strings.Contains(reason, "CHECK constraint") || string(raw) != string(refused.Data) {
			t.Errorf("rejected = (%q, %q, %s, %q), want (%q, %q, unstorable) with DuckDB's reason and the raw bytes", subject, msgID, class, reason, refused.Subject, refused.ID)
		}
	})
	checkAllAcked(t, b, uint64(len(all)))
	if s := w.Stats(); s.Rejected != 1 || s.Events != uint64(len(good)) {
		t.Errorf("Stats() = %d events, %d rejected; want %d and 1", s.Events, s.Rejected, len(good))
	}
	return w
}

func checkRejected(t *testing.T, db *sql.DB, want int, check func(i int, subject, msgID, class, reason string, raw []byte)) {
	t.Helper()
	rows, err := db.Query("SELECT subject, msg_id, error_class, reason, raw FROM rejected_events ORDER BY stream_seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var subject, msgID, class, reason string
		var raw []byte
		if err := rows.Scan(&subject, &msgID, &class, &reason, &raw); err != nil {
			t.Fatal(err)
		}
		if i < want {
			check(i, subject, msgID, class, reason, raw)
		}
	}
	if i != want {
		t.Errorf("rejected_events has %d rows, want %d", i, want)
	}
}

// checkAllAcked: nothing is left for redelivery (rejected messages terminated, the rest acked).
func checkAllAcked(t *testing.T, b *bus.Bus, last uint64) {
	t.Helper()
	s, err := b.Stream(warehousetest.Context(t, 5*time.Second), events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.ConsumerInfo(warehousetest.Context(t, 5*time.Second), events.AnalyzerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || info.AckFloor.Stream != last {
		t.Errorf("consumer ack floor %d, pending %d; want %d and 0", info.AckFloor.Stream, info.NumAckPending, last)
	}
}

// TestLargestMessageIsIngested: a message about as large as the stream takes (its MaxMsgSize,
// events.MaxEventSize, headers included), among ordinary events, reaches the analyzer (here
// rejected as malformed) and the events after it are stored. The client's pull ahead is a count
// of messages, from the stream's mean size (warehouse's pullAhead): a byte bound below the
// message's size would stall the consumer on it for good.
func TestLargestMessageIsIngested(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	good := warehousetest.SampleMsgs(t)
	big := msg{Subject: "ditto.events.s1.big.run.started", ID: "big-1",
		Data: []byte(`{"schema":1,"payload":"` + strings.Repeat("x", events.MaxEventSize-256) + `"`)}
	all := append(append(append([]msg(nil), good[:len(good)/2]...), big), good[len(good)/2:]...)
	warehousetest.Publish(t, b, all)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchWait: 20 * time.Millisecond})
	checkExact(t, w, good)
	checkRejected(t, w.DB(), 1, func(_ int, subject, msgID, class, reason string, raw []byte) {
		if subject != big.Subject || msgID != big.ID || class != "malformed" || reason == "" || len(raw) != len(big.Data) {
			t.Errorf("rejected = (%q, %q, %s, %q, %d bytes), want (%q, %q, malformed) with a reason and its %d bytes",
				subject, msgID, class, reason, len(raw), big.Subject, big.ID, len(big.Data))
		}
	})
	checkAllAcked(t, b, uint64(len(all)))
}

// TestCountsBeyond32BitsAreRefused: an attempt (the envelope's, a plan's or a retry's), a run's
// input index, a model call's transport retries or tokens beyond 2³¹−1, or a payload key that
// encoding/json alone reads as a field, is kept in rejected_events, naming the field, with
// ingestion going on past it. The envelope's attempt was stored wrapped round (the event under
// another attempt) and a plan's made the queries of the plans view that read it fail. The
// largest values that fit are stored as sent and read back; a member a type does not have
// (plan.accepted's attempt) is stored and not read.
func TestCountsBeyond32BitsAreRefused(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ev := func(id, typ, run string, attempt int64, payload string) msg {
		data := fmt.Sprintf(`{"schema":1,"id":%q,"type":%q,"time":"2026-12-07T09:00:00Z","study":"big","run":%q,"attempt":%d,"seq":1,"source":{"kind":"production","id":"x"},"payload":%s}`,
			id, typ, run, attempt, payload)
		return msg{Subject: "ditto.events.big." + run + "." + typ, ID: id, Data: []byte(data)}
	}
	const most = events.MaxCount
	plan := func(attempt int64) string {
		return fmt.Sprintf(`{"text":"1. a","attempt":%d,"structured":false}`, attempt)
	}
	call := func(retries, tokens int64) string {
		return fmt.Sprintf(`{"model":"m","prompt_tokens":%d,"completion_tokens":1,"latency_ms":1,"transport_retries":%d}`, tokens, retries)
	}
	start := func(index int64) string {
		return fmt.Sprintf(`{"task":"t","model":"m","condition":"c","input_index":%d,"seed_index":%d}`, index, index)
	}
	fits := []msg{
		ev("fit-1", "plan.proposed", "r1", most, plan(most)),
		ev("fit-2", "model.called", "r2", 1, call(most, most)),
		ev("fit-3", "run.started", "r3", 1, start(most)),
		ev("fit-4", "plan.accepted", "r4", 1, `{"steps":[{"state":"A","tool":"t"}],"attempt":2147483648,"structured":"yes"}`),
	}
	refused := []struct {
		m     msg
		field string
	}{
		{ev("big-1", "plan.proposed", "r5", most+1, plan(1)), "invalid field: attempt: "},
		{ev("big-2", "plan.proposed", "r5", 1, plan(most+1)), "invalid field: payload.attempt: "},
		{ev("big-3", "model.called", "r5", 1, call(most+1, 1)), "invalid field: payload.transport_retries: "},
		{ev("big-4", "model.called", "r5", 1, call(0, most+1)), "invalid field: payload.prompt_tokens: "},
		{ev("big-5", "retry.scheduled", "r5", 1, `{"attempt":2147483648,"reason":"x"}`), "invalid field: payload.attempt: "},
		{ev("big-6", "run.started", "r6", 1, start(most+1)), "invalid field: payload.input_index: "},
		{ev("big-7", "plan.proposed", "r5", 1, `{"text":"1. a","attempt":1,"Attempt":2147483648}`),
			"in case alone: payload.attempt: "},
	}
	var all []msg
	for i := range max(len(fits), len(refused)) {
		if i < len(fits) {
			all = append(all, fits[i])
		}
		if i < len(refused) {
			all = append(all, refused[i].m)
		}
	}
	warehousetest.Publish(t, b, all)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 4, BatchWait: 20 * time.Millisecond, AckWait: time.Second})
	checkRejected(t, w.DB(), len(refused), func(i int, subject, msgID, class, reason string, raw []byte) {
		r := refused[i]
		want := "invalid" // a *FieldError of ErrInvalidField; ErrKeyCase is a kind of ErrMalformed
		if !strings.HasPrefix(r.field, want) {
			want = "malformed"
		}
		if msgID != r.m.ID || class != want || !strings.Contains(reason, r.field) || string(raw) != string(r.m.Data) {
			t.Errorf("rejected[%d] = (%q, %s, %q), want (%q, %s) with a reason holding %q and the raw bytes",
				i, msgID, class, reason, r.m.ID, want, r.field)
		}
	})
	for _, q := range []string{
		"SELECT attempt FROM events WHERE id = 'fit-1'",
		"SELECT plan_attempt FROM plans WHERE run = 'r1'",
		"SELECT transport_retries FROM model_calls WHERE run = 'r2'",
		"SELECT prompt_tokens FROM model_calls WHERE run = 'r2'",
		"SELECT tokens - 1 FROM model_calls WHERE run = 'r2'",
		"SELECT input_index FROM runs WHERE run = 'r3'",
		"SELECT seed_index FROM runs WHERE run = 'r3'",
	} {
		if n := warehousetest.Count(t, w.DB(), q); n != most {
			t.Errorf("%s = %d, want %d", q, n, most)
		}
	}
	if n := warehousetest.Count(t, w.DB(), "SELECT count(*) FROM plans WHERE run = 'r4' AND plan_attempt IS NULL AND structured IS NULL"); n != 1 {
		t.Errorf("plan.accepted rows with plan_attempt and structured NULL = %d, want 1", n)
	}
	checkAllAcked(t, b, uint64(len(all)))
}
