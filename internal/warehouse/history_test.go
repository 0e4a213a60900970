package warehouse_test

import (
	"cmp"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// The committer refolds an attempt from its stored rows when a late event arrives: every row
// reads back as the event that events.Decode made of its message, payload included (the rows
// are rebuilt from their columns and the stored payload bytes, never re-encoded as JSON), and
// the stored payload is the message's, byte for byte, in both builds (Arrow and appender).
func TestStoredHistoriesReadBackAsDecoded(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := append(testMsgs(t), warehousetest.EnvelopeMsgs(t, tracedRun())...)
	warehousetest.Publish(t, b, msgs)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, small())

	type attempt struct {
		study, run string
		n          int
	}
	want := map[attempt][]events.Envelope{}
	seen := map[string]bool{}
	ctx := warehousetest.Context(t, 30*time.Second)
	for _, m := range msgs {
		e, payload, err := events.DecodeWithPayload(m.Data)
		if err != nil || seen[e.ID] {
			continue // rejected or a duplicate: not stored
		}
		seen[e.ID] = true
		// The payload column holds the producer's bytes: not compacted, nor '<', '>' and '&'
		// escaped (which a JSON column written through DuckDB's table appender did).
		var stored string
		if err := w.DB().QueryRowContext(ctx, "SELECT payload::VARCHAR FROM events WHERE id = ?", e.ID).Scan(&stored); err != nil {
			t.Fatalf("payload of %s: %v", e.ID, err)
		}
		if stored != string(payload) {
			t.Errorf("event %s: stored payload\n%s\nwant the message's\n%s", e.ID, stored, payload)
		}
		e.Time = e.Time.Truncate(time.Microsecond) // DuckDB keeps microseconds
		k := attempt{e.Study, e.Run, e.Attempt}
		want[k] = append(want[k], e)
	}
	if len(want) < 2 {
		t.Fatalf("only %d attempts in the test messages", len(want))
	}
	bySeq := func(a, b events.Envelope) int { return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID)) }
	for k, evs := range want {
		got, err := warehouse.ReadHistoryForTest(ctx, w, k.study, k.run, k.n)
		if err != nil {
			t.Fatalf("ReadHistoryForTest(%v) = %v", k, err)
		}
		slices.SortFunc(got, bySeq)
		slices.SortFunc(evs, bySeq)
		if len(got) != len(evs) {
			t.Fatalf("attempt %v: read %d events, stored %d", k, len(got), len(evs))
		}
		for i := range got {
			if !got[i].Time.Equal(evs[i].Time) {
				t.Errorf("attempt %v event %s: time %v, want %v", k, evs[i].ID, got[i].Time, evs[i].Time)
			}
			got[i].Time = evs[i].Time
			if !reflect.DeepEqual(got[i], evs[i]) {
				t.Errorf("attempt %v: read back\n%#v\nwant\n%#v", k, got[i], evs[i])
			}
		}
	}
}

// tracedRun is a production run with what the test messages lack: trace and span ids, an
// ignorable event of a type this build does not know, a seed and a state graph.
func tracedRun() []events.Envelope {
	at := time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.UTC)
	seed := int64(7)
	payloads := []events.Payload{
		events.RunStarted{Task: "t", Model: "m", Condition: "c", Components: []string{}, Seed: &seed,
			Start: "A", Graph: map[string][]string{"A": {"B"}, "B": nil}},
		events.Unknown{Type: "agent.mood", Raw: []byte(`{"mood":"calm"}`)},
		events.ToolCalled{CallID: "c1", Tool: "fetch", Args: events.MustCanonical(map[string]any{"id": "<1>"})},
		events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: events.MustCanonical("done")},
	}
	var out []events.Envelope
	for i, p := range payloads {
		e := events.New("traced", "run-1", at.Add(time.Duration(i)*time.Millisecond), p)
		e.Seq, e.Source = int64(i+1), events.Source{Kind: events.SourceProduction, ID: "agent"}
		e.TraceID, e.SpanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		e.Ignorable = e.Type == "agent.mood"
		out = append(out, e)
	}
	return out
}
