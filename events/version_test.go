package events

import (
	"errors"
	"fmt"
	"testing"
)

// TestVersion1RefusesVersion2 checks that version 1 keeps its meaning: what version 2 added
// is invalid in an event that says version 1, and valid in version 2.
func TestVersion1RefusesVersion2(t *testing.T) {
	started := samplesV1()[TypeRunStarted].(RunStarted)
	withKey, withInput := started, started
	withKey.InputKey = "inv-1"
	withInput.Input = MustCanonical(map[string]any{"invoice": 1})
	errored := RunFinished{Status: StatusErrored, Cause: Cause{Kind: CauseMissingKey, Permanent: true, Detail: "OPENAI_API_KEY is unset"}}
	tests := []struct {
		name      string
		give      Payload
		wantField string
	}{
		{"errored status", errored, "payload.status"},
		{"overflow status", RunFinished{Status: StatusOverflow}, "payload.status"},
		{"cause", RunFinished{Status: StatusFailed, Cause: Cause{Kind: CauseTimeout, Detail: "x"}}, "payload.cause"},
		{"input key", withKey, "payload.input_key"},
		{"input", withInput, "payload.input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v1 := sampleEnvelopeV(1, tt.give.EventType(), tt.give)
			err := v1.Validate()
			var fe *FieldError
			if !errors.Is(err, ErrUnknownVersion) || !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("Validate(v1 %s) = %v, want ErrUnknownVersion naming %s", tt.name, err, tt.wantField)
			}
			if tt.name == "cause" {
				return // invalid in any version: only an errored run has a cause
			}
			v2 := sampleEnvelopeV(2, tt.give.EventType(), tt.give)
			if err := v2.Validate(); err != nil {
				t.Errorf("Validate(v2 %s) = %v, want nil", tt.name, err)
			}
		})
	}
}

// TestVersion2RefusesVersion3: the server of a tool call, added in version 3, is invalid in an
// event of version 1 or 2 and valid in version 3.
func TestVersion2RefusesVersion3(t *testing.T) {
	server := ToolServer{Name: "dpa-review", Version: "1.0.0", Key: "dpa", Transport: "stdio"}
	called := samplesV2()[TypeToolCalled].(ToolCalled)
	returned := samplesV2()[TypeToolReturned].(ToolReturned)
	called.Server, returned.Server = server, server
	for _, p := range []Payload{called, returned} {
		for v := 1; v <= 2; v++ {
			env := sampleEnvelopeV(v, p.EventType(), p)
			err := env.Validate()
			var fe *FieldError
			if !errors.Is(err, ErrUnknownVersion) || !errors.As(err, &fe) || fe.Field != "payload.server" {
				t.Errorf("Validate(v%d %s with a server) = %v, want ErrUnknownVersion naming payload.server", v, p.EventType(), err)
			}
		}
		v3 := sampleEnvelopeV(3, p.EventType(), p)
		if err := v3.Validate(); err != nil {
			t.Errorf("Validate(v3 %s with a server) = %v, want nil", p.EventType(), err)
		}
		b, err := Encode(&v3)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", b, err)
		}
		var got ToolServer
		switch d := dec.Payload.(type) {
		case ToolCalled:
			got = d.Server
		case ToolReturned:
			got = d.Server
		}
		if got != server {
			t.Errorf("Decode(Encode(%s)).Server = %+v, want %+v", p.EventType(), got, server)
		}
	}
}

func TestRunFinishedCause(t *testing.T) {
	cause := Cause{Kind: CauseUnreachable, Endpoint: "http://127.0.0.1:9/v1", Attempts: 4, Detail: "connection refused"}
	tests := []struct {
		name      string
		give      RunFinished
		wantErr   error
		wantField string
	}{
		{"errored with cause", RunFinished{Status: StatusErrored, Cause: cause}, nil, ""},
		{"errored without cause", RunFinished{Status: StatusErrored}, ErrMissingField, "payload.cause"},
		{"cause without kind", RunFinished{Status: StatusErrored, Cause: Cause{Detail: "x"}}, ErrMissingField, "payload.cause.kind"},
		{"cause without detail", RunFinished{Status: StatusErrored, Cause: Cause{Kind: CauseTimeout}}, ErrMissingField, "payload.cause.detail"},
		{"failed with cause", RunFinished{Status: StatusFailed, Cause: cause}, ErrInvalidField, "payload.cause"},
		{"overflow", RunFinished{Status: StatusOverflow}, nil, ""},
		{"errored success", RunFinished{Status: StatusErrored, Success: true, Cause: cause}, ErrInvalidField, "payload.success"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want nil", tt.name, err)
				}
				return
			}
			var fe *FieldError
			if !errors.Is(err, tt.wantErr) || !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Errorf("Validate(%s) = %v, want %v naming %s", tt.name, err, tt.wantErr, tt.wantField)
			}
		})
	}
}

func TestScored(t *testing.T) {
	for status, want := range map[string]bool{
		StatusSucceeded: true, StatusFailed: true, StatusEscalated: true, StatusOverflow: true,
		StatusErrored: false, StatusAborted: false, "incomplete": false,
	} {
		if got := Scored(status); got != want {
			t.Errorf("Scored(%q) = %v, want %v", status, got, want)
		}
	}
}

func TestResolvedInputKey(t *testing.T) {
	derived, err := InputKeyOf([]byte(`{"b": 1, "a": [1.0, "x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	same, _ := InputKeyOf([]byte(`{"a":[1,"x"],"b":1}`))
	if derived != same {
		t.Errorf("InputKeyOf differs for equal inputs: %s, %s", derived, same)
	}
	tests := []struct {
		name string
		give RunStarted
		want string
	}{
		{"client key wins", RunStarted{InputKey: "inv-7", Input: []byte(`{"a":[1,"x"],"b":1}`)}, "inv-7"},
		{"derived from the input", RunStarted{Input: []byte(`{"a":[1,"x"],"b":1}`)}, derived},
		{"unknown", RunStarted{}, ""},
	}
	for _, tt := range tests {
		if got := tt.give.ResolvedInputKey(); got != tt.want {
			t.Errorf("ResolvedInputKey(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if _, err := InputKeyOf([]byte(`{"a":`)); !errors.Is(err, ErrNotCanonical) {
		t.Errorf("InputKeyOf(malformed) error = %v, want ErrNotCanonical", err)
	}
}

func ExampleInputKeyOf() {
	a, _ := InputKeyOf([]byte(`{"invoice": "INV-1000", "currency": "EUR"}`))
	b, _ := InputKeyOf([]byte(`{"currency":"EUR","invoice":"INV-1000"}`))
	fmt.Println(a == b, a[:len(InputKeyPrefix)+8])
	// Output: true sha256:67b468e8
}
