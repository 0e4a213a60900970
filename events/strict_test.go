package events

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// event returns a run.started event whose payload is payload (a JSON object's members).
func strictEvent(envelopeExtra, payload string) []byte {
	return []byte(`{"schema":1,"id":"01REPROSURROGATE0000000001","type":"run.started","time":"2026-12-01T07:35:00Z",` +
		`"study":"s1","run":"r1","attempt":1,"seq":1,"source":{"kind":"production","id":"x"}` + envelopeExtra +
		`,"payload":{"task":"t","condition":"c",` + payload + `}}`)
}

// TestDecodeRefusesTextOtherReadersRefuse: every string of an event (keys and values, payload
// and raw JSON values included) must be valid Unicode and no object may repeat a key. Each of
// these decoded before (encoding/json reads them) and then stopped DuckDB, or read differently
// in it.
func TestDecodeRefusesTextOtherReadersRefuse(t *testing.T) {
	tests := []struct {
		name      string
		give      []byte
		wantErr   error
		wantField string
	}{
		{"lone high surrogate (the issue's reproduction)", strictEvent("", `"model":"m\ud800x"`), ErrInvalidText, "payload.model"},
		{"lone low surrogate", strictEvent("", `"model":"m\uDC00"`), ErrInvalidText, "payload.model"},
		{"high surrogate then a non-surrogate escape", strictEvent("", `"model":"\ud800\u0041"`), ErrInvalidText, "payload.model"},
		{"surrogates in the wrong order", strictEvent("", `"model":"\udc00\ud800"`), ErrInvalidText, "payload.model"},
		{"high surrogate at the end of the string", strictEvent("", `"model":"m\ud83d"`), ErrInvalidText, "payload.model"},
		{"bytes that are not UTF-8 in a payload value", strictEvent("", "\"model\":\"m\xff\xfe\""), ErrInvalidText, "payload.model"},
		{"a surrogate encoded in UTF-8", strictEvent("", "\"model\":\"m\xed\xa0\x80\""), ErrInvalidText, "payload.model"},
		{"bytes that are not UTF-8 in an envelope value", strictEvent(`,"trace_id":"`+"\xc3"+`"`, `"model":"m"`), ErrInvalidText, "trace_id"},
		{"bytes that are not UTF-8 in a key", strictEvent("", "\"model\":\"m\",\"k\xff\":1"), ErrInvalidText, "payload"},
		{"a lone surrogate deep in the raw sampling object", strictEvent("", `"model":"m","sampling":{"x":[1,{"y":"\ud800"}]}`), ErrInvalidText, "payload.sampling.x[1].y"},
		{"duplicate payload key", strictEvent("", `"model":"a","model":"b"`), ErrDuplicateKey, "payload.model"},
		{"duplicate key spelled with an escape", strictEvent("", `"model":"a","mod\u0065l":"b"`), ErrDuplicateKey, "payload.model"},
		{"payload key in another case after the field", strictEvent("", `"model":"m","Model":"n"`), ErrKeyCase, "payload.model"},
		{"payload key in another case alone", strictEvent("", `"MODEL":"m"`), ErrKeyCase, "payload.model"},
		{"payload key with a Kelvin sign for k", strictEvent("", "\"model\":\"m\",\"tas\u212a\":\"x\""), ErrKeyCase, "payload.task"},
		{"nested payload key in another case", strictEvent("", `"model":"m","sampling":{"Temperature":0.5}`), ErrKeyCase, "payload.sampling.temperature"},
		{"duplicate envelope key", strictEvent(`,"study":"s2"`, `"model":"m"`), ErrDuplicateKey, "study"},
		{"duplicate nested key", strictEvent("", `"model":"m","graph":{"A":null,"A":["B"]}`), ErrDuplicateKey, "payload.graph.A"},
		{"nesting deeper than 512", strictEvent("", `"model":"m","sampling":{"x":`+strings.Repeat("[", 600)+strings.Repeat("]", 600)+`}`), ErrMalformed, "payload.sampling.x" + strings.Repeat("[0]", 61) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.give)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Decode(%q) = %v, want %v", tt.give, err, tt.wantErr)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode(%q) = %v, want a kind of ErrMalformed", tt.give, err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("Decode(%q) = %v, want field %q", tt.give, err, tt.wantField)
			}
		})
	}
}

// TestDecodeKeepsValidUnicode: escapes of valid characters, surrogate pairs and non-ASCII
// UTF-8 all decode, and repeated keys in different objects are not duplicates.
func TestDecodeKeepsValidUnicode(t *testing.T) {
	for _, give := range [][]byte{
		strictEvent("", `"model":"m\ud83d\ude00 \u00e9 \u0000 é 😀"`),
		strictEvent("", `"model":"\uD83D\uDE00"`),
		strictEvent("", `"model":"m","sampling":{"temperature":1},"graph":{"A":["B"],"B":null}`),
		strictEvent("", `"model":"m","sampling":{"top_p":1},"graph":{"model":["model"]}`),
	} {
		e, err := Decode(give)
		if err != nil {
			t.Errorf("Decode(%q) = %v, want the event", give, err)
			continue
		}
		if _, err := Encode(&e); err != nil {
			t.Errorf("Encode(Decode(%q)) = %v", give, err)
		}
	}
}

// TestEncodeRefusesRawTextOtherReadersRefuse: Encode writes raw JSON values (an Unknown
// payload, arguments) as given, so it checks them as Decode does.
func TestEncodeRefusesRawTextOtherReadersRefuse(t *testing.T) {
	at := time.Date(2026, 12, 1, 7, 35, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		payload Payload
		wantErr error
	}{
		{"unknown payload with a lone surrogate", Unknown{Type: "agent.mood", Raw: []byte(`{"mood":"\ud800"}`)}, ErrInvalidText},
		{"unknown payload with a repeated key", Unknown{Type: "agent.mood", Raw: []byte(`{"mood":1,"mood":2}`)}, ErrDuplicateKey},
		// Arguments are refused before, by the payload's own validation (they must be canonical).
		{"tool arguments with a lone surrogate", ToolCalled{CallID: "c", Tool: "t", Args: []byte(`{"city":"\udfff"}`)}, ErrNotCanonical},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New("s1", "r1", at, tt.payload)
			e.Seq, e.Ignorable = 1, true
			e.Source = Source{Kind: SourceProduction, ID: "x"}
			if _, err := Encode(&e); !errors.Is(err, tt.wantErr) {
				t.Errorf("Encode(%s) = %v, want %v", tt.name, err, tt.wantErr)
			}
		})
	}
}

// TestSubjectTokensBounded: every value that goes into a subject is checked before a
// publish. A 5,000-byte ignorable type made the NATS server close the connection (its control
// line is 4 KiB); wildcards, spaces and empty tokens would publish on the wrong subject.
func TestSubjectTokensBounded(t *testing.T) {
	tests := []struct {
		name        string
		study, run  string
		typ         Type
		wantErrText string
	}{
		{"5,000-byte type", "s1", "r1", Type(strings.Repeat("x", 5000)), "longer than 128 bytes"},
		{"129-byte type", "s1", "r1", Type(strings.Repeat("a.", 64) + "b"), "longer than 128 bytes"},
		{"type with a wildcard", "s1", "r1", "agent.*", `'*'`},
		{"type with a full wildcard", "s1", "r1", "agent.>", `'>'`},
		{"type with a full wildcard after a dot", "s1", "r1", ".>", `'.'`},
		{"type with a space", "s1", "r1", "agent mood", `' '`},
		{"type with an empty token", "s1", "r1", "agent..mood", `'.'`},
		{"type starting with a dot", "s1", "r1", ".mood", `'.'`},
		{"type ending with a dot", "s1", "r1", "mood.", `'.'`},
		{"study with a dot", "s.1", "r1", "run.started", `'.'`},
		{"run with a wildcard", "s1", "*", "run.started", `'*'`},
		{"129-byte study", strings.Repeat("s", 129), "r1", "run.started", "longer than 128 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Subject(tt.study, tt.run, tt.typ)
			if !errors.Is(err, ErrUnsafeToken) || !strings.Contains(err.Error(), tt.wantErrText) {
				t.Errorf("Subject(%.20q, %.20q, %.20q) = %v, want ErrUnsafeToken saying %s", tt.study, tt.run, tt.typ, err, tt.wantErrText)
			}
			raw := []byte(`{"schema":1,"id":"01X","type":` + quote(string(tt.typ)) + `,"time":"2026-12-01T07:35:00Z","study":` +
				quote(tt.study) + `,"run":` + quote(tt.run) + `,"attempt":1,"seq":1,"source":{"kind":"production","id":"x"},"ignorable":true,"payload":{}}`)
			if _, err := Decode(raw); !errors.Is(err, ErrUnsafeToken) {
				t.Errorf("Decode(event with %s) = %v, want ErrUnsafeToken", tt.name, err)
			}
		})
	}
	if s, err := Subject("s1", "r1", "agent.mood-2_x"); err != nil || s != "ditto.events.s1.r1.agent.mood-2_x" {
		t.Errorf("Subject(s1, r1, agent.mood-2_x) = %q, %v", s, err)
	}
	if s, err := Subject("s1", "r1", ">"); err != nil || s != "ditto.events.s1.r1.>" {
		t.Errorf("Subject(s1, r1, >) = %q, %v; want the filter of the run's events", s, err)
	}
}

func quote(s string) string { return `"` + s + `"` }

// TestIDTravelsAsMsgID: an id NATS would not carry unchanged as Nats-Msg-Id is refused;
// NATS trims header values, so "a" and "a " would be one message and the second lost.
func TestIDTravelsAsMsgID(t *testing.T) {
	for _, id := range []string{"a ", " a", "a\tb", "a\r\nb", "a\x00", "é", "a\x7f"} {
		raw := []byte(`{"schema":1,"id":` + quoteJSON(id) + `,"type":"run.started","time":"2026-12-01T07:35:00Z","study":"s1","run":"r1","attempt":1,"seq":1,"source":{"kind":"production","id":"x"},"payload":{"task":"t","model":"m","condition":"c"}}`)
		_, err := Decode(raw)
		var fe *FieldError
		if !errors.Is(err, ErrUnsafeToken) || !errors.As(err, &fe) || fe.Field != "id" {
			t.Errorf("Decode(event with id %q) = %v, want ErrUnsafeToken on id", id, err)
		}
	}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
