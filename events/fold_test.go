package events

import (
	"errors"
	"testing"
	"time"
)

// history builds a run attempt's events with consecutive sequence numbers.
func history(payloads ...Payload) []Envelope {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	out := make([]Envelope, len(payloads))
	for i, p := range payloads {
		e := New("s1", "r1", t0.Add(time.Duration(i)*time.Millisecond), p)
		e.Seq = int64(i + 1)
		e.Source = Source{Kind: SourceHarness, ID: "w"}
		out[i] = e
	}
	return out
}

func goodHistory() []Envelope {
	return history(
		RunStarted{Task: "t", Model: "m", Condition: "harness_sp", Components: []string{ComponentFSM, ComponentPlanning},
			Start: "A", Graph: map[string][]string{"A": {"B", "C"}, "B": {"C"}, "C": nil}},
		PlanProposed{Text: `[{"state":"A","intended_tool":"a"}]`, Attempt: 1, Structured: true},
		PlanAccepted{Steps: []PlanStep{{"A", "a"}, {"C", "c"}}},
		StateEntered{State: "A"},
		ModelCalled{Model: "m", PromptTokens: 10, CompletionTokens: 2},
		ToolCalled{CallID: "1", Tool: "a", Args: MustCanonical(map[string]int{"x": 1})},
		ToolReturned{CallID: "1", Tool: "a", OK: true, Output: MustCanonical(1)},
		OutputValidated{State: "A"},
		StateExited{State: "A"},
		StateEntered{State: "C", From: "A"},
		ToolCalled{CallID: "2", Tool: "c", Args: MustCanonical(map[string]int{})},
		ToolReturned{CallID: "2", Tool: "c", OK: true, Output: MustCanonical("done")},
		StateExited{State: "C"},
		RunFinished{Status: StatusSucceeded, Success: true, Output: MustCanonical("done")},
	)
}

func TestFoldGood(t *testing.T) {
	r, err := Fold(goodHistory())
	if err != nil {
		t.Fatalf("Fold(good) error %v", err)
	}
	if !r.Done() || r.Plan != `[{"state":"A","tool":"a"},{"state":"C","tool":"c"}]` ||
		len(r.States) != 2 || len(r.Calls) != 2 || r.PromptTokens != 10 || string(r.Output) != `"done"` {
		t.Errorf("Fold(good) = %+v", r)
	}
}

func TestFoldRejects(t *testing.T) {
	good := goodHistory()
	mutate := func(f func(h []Envelope) []Envelope) []Envelope {
		h := append([]Envelope(nil), good...)
		return f(h)
	}
	tests := []struct {
		name    string
		give    []Envelope
		wantErr error
	}{
		{"not started", good[1:], ErrNotStarted},
		{"out of order", mutate(func(h []Envelope) []Envelope { h[3], h[4] = h[4], h[3]; return h }), ErrOutOfOrder},
		{"gap", mutate(func(h []Envelope) []Envelope { return append(h[:3], h[4:]...) }), ErrOutOfOrder},
		{"duplicate sequence", mutate(func(h []Envelope) []Envelope { return append(h[:5], h[4:]...) }), ErrDuplicateSequence},
		{"after finish", mutate(func(h []Envelope) []Envelope {
			extra := h[4]
			extra.Seq = int64(len(h) + 1)
			return append(h, extra)
		}), ErrAfterFinish},
		{"illegal edge", mutate(func(h []Envelope) []Envelope {
			h[9].Payload = StateEntered{State: "B"}
			h[12].Payload = StateExited{State: "B"}
			h2 := append([]Envelope(nil), h...)
			// B → C is legal but A → B → ... here we jump C → B instead.
			h2[3].Payload = StateEntered{State: "C"}
			h2[7].Payload = OutputValidated{State: "C"}
			h2[8].Payload = StateExited{State: "C"}
			return h2
		}), ErrIllegalTransition},
		{"enter while in a state", mutate(func(h []Envelope) []Envelope { h[8].Payload = StateEntered{State: "B"}; return h }), ErrIllegalTransition},
		{"return without call", mutate(func(h []Envelope) []Envelope { h[5].Payload = ModelCalled{Model: "m"}; return h }), ErrIllegalTransition},
		{"wrong run", mutate(func(h []Envelope) []Envelope { h[2].Run = "r2"; return h }), ErrWrongRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fold(tt.give)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Fold(%s) error = %v, want %v", tt.name, err, tt.wantErr)
			}
		})
	}
}

func TestFoldDistinctErrors(t *testing.T) {
	// The four history defects of the issue must be told apart.
	errs := []error{ErrOutOfOrder, ErrDuplicateSequence, ErrAfterFinish, ErrIllegalTransition}
	for i := range errs {
		for j := range errs {
			if i != j && errors.Is(errs[i], errs[j]) {
				t.Errorf("%v is %v", errs[i], errs[j])
			}
		}
	}
}

func TestFoldWithoutFSMAllowsAnyOrder(t *testing.T) {
	// Baseline runs are not under finite-state execution: states follow the model's choices.
	h := history(
		RunStarted{Task: "t", Model: "m", Condition: "baseline", Graph: map[string][]string{"A": {"B"}, "B": nil}, Start: "A"},
		StateEntered{State: "B"}, StateExited{State: "B"},
		StateEntered{State: "A"}, StateExited{State: "A"},
		RunFinished{Status: StatusFailed},
	)
	if _, err := Fold(h); err != nil {
		t.Errorf("Fold(baseline out of graph order) error %v", err)
	}
}

// futureEvent is a payload the run fold was not written for.
type futureEvent struct{}

func (futureEvent) EventType() Type { return "run.paused" }
func (futureEvent) Validate() error { return nil }

func TestFoldUnknownPayloads(t *testing.T) {
	tests := []struct {
		name    string
		give    Envelope
		wantErr error // nil: skipped
	}{
		{"ignorable event of an unknown type", Envelope{Type: "run.paused", Ignorable: true, Payload: Unknown{Type: "run.paused", Raw: []byte(`{}`)}}, nil},
		{"unknown type not marked ignorable", Envelope{Type: "run.paused", Payload: Unknown{Type: "run.paused", Raw: []byte(`{}`)}}, ErrUnknownType},
		{"payload type the fold does not know", Envelope{Type: "run.paused", Payload: futureEvent{}}, ErrUnknownType},
		{"pointer to a known payload", Envelope{Type: TypeRetryScheduled, Payload: &RetryScheduled{State: "A", Attempt: 1}}, ErrUnknownType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := goodHistory()
			r, err := Fold(h[:5])
			if err != nil {
				t.Fatal(err)
			}
			before := *r
			e := tt.give
			e.Study, e.Run, e.Attempt, e.Seq = "s1", "r1", 1, 6
			err = r.Apply(&e)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Apply(%s) error = %v, want %v", tt.name, err, tt.wantErr)
			}
			if err != nil && (r.LastSeq != before.LastSeq || r.Current != before.Current || r.ModelCalls != before.ModelCalls) {
				t.Fatalf("Apply(%s) failed but moved the run: %+v", tt.name, r)
			}
			// The history goes on after a skipped event; after a refused one, from the same seq.
			for _, next := range h[5:] {
				next.Seq = r.LastSeq + 1
				if err := r.Apply(&next); err != nil {
					t.Fatalf("after %s: Apply(%s) error %v", tt.name, next.Type, err)
				}
			}
			if !r.Done() || len(r.Calls) != 2 {
				t.Fatalf("after %s: run %+v", tt.name, r)
			}
		})
	}
}

// TestFoldKnowsEveryType: every event type Decode knows reaches a case of the fold, so that a
// type added to the codec without its place in the fold fails here, not in a consumer.
func TestFoldKnowsEveryType(t *testing.T) {
	for _, typ := range Types() {
		p, err := decodePayload(typ, SchemaVersion, []byte(`{}`), payloadDecoding{})
		if err != nil {
			t.Fatalf("decodePayload(%s, {}) error %v", typ, err)
		}
		r, err := Fold(goodHistory()[:1])
		if err != nil {
			t.Fatal(err)
		}
		e := Envelope{Study: "s1", Run: "r1", Attempt: 1, Seq: 2, Type: typ, Payload: p}
		if err := r.Apply(&e); errors.Is(err, ErrUnknownType) {
			t.Errorf("Apply(%s) error = %v: the fold has no case for %T", typ, err, p)
		}
	}
}

func TestFoldTotals(t *testing.T) {
	h := goodHistory()
	h = append(h[:len(h)-1], history(RetryScheduled{State: "C", Attempt: 1}, PlanRejected{Errors: []string{"x"}, Attempt: 1},
		ToolRejected{CallID: "3", Tool: "c", Reason: RejectSchema}, ModelCalled{Model: "m", PromptTokens: 5, CompletionTokens: 1})...)
	for i := range h {
		h[i].Seq = int64(i + 1)
	}
	r, err := Fold(h)
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{PromptTokens: 15, CompletionTokens: 3, ModelCalls: 2, ToolCalls: 2, Retries: 1, PlanReprompts: 1, RejectedToolCalls: 1}
	if got := r.Totals(); got != want {
		t.Errorf("Totals() = %+v, want %+v", got, want)
	}
}
