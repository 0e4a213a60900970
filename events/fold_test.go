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
