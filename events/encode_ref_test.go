package events

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events/internal/wire"
)

// encodeReference is Encode without wire.Append: encoding/json for the envelope.
func encodeReference(e *Envelope) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	var payload []byte
	if u, ok := e.Payload.(Unknown); ok {
		payload = u.Raw
	} else {
		var err error
		if payload, err = marshalNoHTMLEscape(e.Payload); err != nil {
			return nil, fmt.Errorf("events: encode %s payload: %w", e.Type, err)
		}
	}
	w := wire.Envelope{
		Schema: e.Schema, ID: e.ID, Type: string(e.Type), Time: e.Time.UTC(), Study: e.Study,
		Run: e.Run, Attempt: e.Attempt, Seq: e.Seq,
		Source:  wire.Source{Kind: string(e.Source.Kind), ID: e.Source.ID},
		TraceID: e.TraceID, SpanID: e.SpanID, Ignorable: e.Ignorable, Payload: payload,
	}
	b, err := marshalNoHTMLEscape(w)
	if err != nil {
		return nil, fmt.Errorf("events: encode envelope: %w", err)
	}
	if len(b) > MaxEventSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	return b, nil
}

func checkSameEncode(t *testing.T, e *Envelope) {
	t.Helper()
	got, gotErr := Encode(e)
	want, wantErr := encodeReference(e)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
		t.Fatalf("Encode(%+v) = %s, %v; want %s, %v", e, got, gotErr, want, wantErr)
	}
}

func TestEncodeMatchesReference(t *testing.T) {
	base := func() Envelope {
		e := New("s", "r", time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.FixedZone("x", 3600)), StateEntered{State: "A"})
		e.Seq, e.Source = 7, Source{Kind: SourceProduction, ID: "agent"}
		return e
	}
	tests := []struct {
		name string
		edit func(*Envelope)
	}{
		{"plain", func(*Envelope) {}},
		{"trace and span", func(e *Envelope) {
			e.TraceID, e.SpanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		}},
		{"ignorable", func(e *Envelope) { e.Ignorable = true }},
		{"escaped source id", func(e *Envelope) { e.Source.ID = "a\"b\\c\nd\te<f>&" }},
		{"non-ascii source id", func(e *Envelope) { e.Source.ID = "é\u2028\u2029\x7f" }},
		{"invalid utf-8 source id", func(e *Envelope) { e.Source.ID = "a\xffb" }},
		{"non-ascii id", func(e *Envelope) { e.ID = "ид" }},
		{"year 10000", func(e *Envelope) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year 1", func(e *Envelope) { e.Time = time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC) }},
		{"unknown payload with space", func(e *Envelope) {
			e.Type, e.Ignorable, e.Payload = "agent.mood", true, Unknown{Type: "agent.mood", Raw: []byte(`{ "mood" : "<calm>" }`)}
		}},
		{"invalid", func(e *Envelope) { e.Seq = 0 }},
		{"html in payload", func(e *Envelope) { e.Payload = StateEntered{State: "<a&b>\u2028"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base()
			tt.edit(&e)
			checkSameEncode(t, &e)
		})
	}
}

// FuzzEncodeFast: for every event Decode accepts, Encode and encodeReference agree.
// It runs in make fuzz; for a longer search: go test -run '^$' -fuzz FuzzEncodeFast -fuzztime 5000000x ./events
func FuzzEncodeFast(f *testing.F) {
	addCodecSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			return
		}
		checkSameEncode(t, &e)
	})
}
