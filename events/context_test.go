package events

import (
	"errors"
	"testing"
)

// contextHistory is a T4 coding run's context events up to an answered recall, then tail.
func contextHistory(tail ...Payload) []Envelope {
	ps := []Payload{
		RunStarted{Task: "inventory-nil-map", Model: "m", Condition: "c", Components: []string{ComponentUpdatePlan}},
		ContextConfigured{Tier: "T4", Budget: 1000, Soft: 600, Hard: 850, Recent: 3, Bulky: 200, SummaryTokens: 256},
		ContextPrepared{Turn: 1, Tokens: 400, Budget: 1000, Messages: 3},
		ModelCalled{Model: "m", Purpose: "act", PromptTokens: 390, CompletionTokens: 20},
		ToolCalled{CallID: "c1", Tool: "update_plan", Args: MustCanonical(map[string]any{"plan": []any{}})},
		PlanUpdated{CallID: "c1", Steps: []PlanUpdate{{Step: "read", Status: "in_progress"}}},
		ToolReturned{CallID: "c1", Tool: "update_plan", OK: true},
		ContextElided{Turn: 2, IDs: []string{"o1", "o2"}, Saved: 300},
		ModelCalled{Model: "m", Purpose: PurposeSummarize, PromptTokens: 500, CompletionTokens: 100},
		ContextSummarized{Turn: 2, Folded: []string{"m1", "o1"}, Steps: 1, Before: 900, After: 500, SummaryTokens: 120},
		ContextPrepared{Turn: 2, Tokens: 700, Budget: 1000, Messages: 6},
		ModelCalled{Model: "m", Purpose: "act", PromptTokens: 690, CompletionTokens: 20},
		ToolCalled{CallID: "c2", Tool: "recall_event", Args: MustCanonical(map[string]any{"id": "o2"})},
		ContextRecalled{CallID: "c2", ID: "o2", Tokens: 250},
		ToolReturned{CallID: "c2", Tool: "recall_event", OK: true},
	}
	return history(append(ps, tail...)...)
}

func TestFoldContext(t *testing.T) {
	r, err := Fold(contextHistory(
		ContextPrepared{Turn: 3, Tokens: 950, Budget: 1000, Messages: 8},
		ModelCalled{Model: "m", Purpose: "act"},
		ContextOverflowed{Turn: 4, Tier: "T4", Needed: 1200, Budget: 1000},
		RunFinished{Status: StatusOverflow},
	))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Context
	if c.Configured == nil || c.Configured.Tier != "T4" || c.Overflow == nil || c.Overflow.Needed != 1200 {
		t.Fatalf("Fold(context) = %+v, want T4 configured and the overflow", c)
	}
	got := [...]int{c.Turns, c.Peak, c.Elisions, c.Elided, c.Saved, c.Recalls, c.Summaries, c.PlanUpdates}
	want := [...]int{3, 950, 1, 2, 300, 1, 1, 1}
	if got != want {
		t.Errorf("Fold(context) turns, peak, elisions, elided, saved, recalls, summaries, plan updates = %v, want %v", got, want)
	}
	if r.ModelCalls != 4 {
		t.Errorf("Fold(context).ModelCalls = %d, want 4 (the summarization call counts)", r.ModelCalls)
	}
}

// TestFoldContextArguments: elided tool-call arguments are counted apart and may be recalled
// like observations; dropped messages and the overflow's reason are kept.
func TestFoldContextArguments(t *testing.T) {
	r, err := Fold(contextHistory(
		ContextElided{Turn: 3, IDs: []string{"m4"}, Arguments: []string{"m3.0", "m3.1"}, Saved: 500, Dropped: []string{"m1", "o1"}},
		ContextPrepared{Turn: 3, Tokens: 990, Budget: 1000, Messages: 5},
		ModelCalled{Model: "m", Purpose: "act"},
		ToolCalled{CallID: "c3", Tool: "recall_event", Args: MustCanonical(map[string]any{"id": "m3.1"})},
		ContextRecalled{CallID: "c3", ID: "m3.1", Tokens: 400},
		ToolReturned{CallID: "c3", Tool: "recall_event", OK: true},
		ContextOverflowed{Turn: 4, Tier: "T4", Needed: 1200, Budget: 1000, Reason: OverflowPreamble, Floor: 1100},
		RunFinished{Status: StatusOverflow},
	))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Context
	got := [...]int{c.Elisions, c.Elided, c.Arguments, c.Saved, c.Dropped, c.Recalls}
	want := [...]int{2, 5, 2, 800, 2, 2}
	if got != want || c.Overflow == nil || c.Overflow.Reason != OverflowPreamble || c.Overflow.Floor != 1100 {
		t.Errorf("Fold elisions, elided, arguments, saved, dropped, recalls = %v (overflow %+v), want %v and the preamble's overflow", got, c.Overflow, want)
	}
	if _, err := Fold(contextHistory(
		ContextElided{Turn: 3, IDs: []string{}, Dropped: []string{"m1"}},
		ToolCalled{CallID: "c3", Tool: "recall_event"}, ContextRecalled{CallID: "c3", ID: "m1"},
	)); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("Fold(recall of a dropped message) = %v, want ErrIllegalTransition (dropped is not stored)", err)
	}
}

func TestFoldContextRejects(t *testing.T) {
	overflow := ContextOverflowed{Turn: 3, Tier: "T4", Needed: 1200, Budget: 1000}
	started := RunStarted{Task: "t", Model: "m", Condition: "c"}
	for _, tt := range []struct {
		name string
		give []Envelope
	}{
		{"configured twice", contextHistory(ContextConfigured{Tier: "T0", Budget: 10})},
		{"configured after preparing", history(started, ContextPrepared{Turn: 1, Tokens: 1, Budget: 10}, ContextConfigured{Tier: "T0", Budget: 10})},
		{"prepared for another budget", contextHistory(ContextPrepared{Turn: 3, Tokens: 100, Budget: 2000})},
		{"recall of an id never elided", contextHistory(ToolCalled{CallID: "c3", Tool: "recall_event"}, ContextRecalled{CallID: "c3", ID: "o9"})},
		{"recall outside a call", contextHistory(ContextRecalled{CallID: "c9", ID: "o1"})},
		{"summary without its call", contextHistory(ContextSummarized{Turn: 3, Folded: []string{"m2"}, Steps: 1})},
		{"summary after a failed call", contextHistory(ModelCalled{Model: "m", Purpose: PurposeSummarize, Error: "boom"},
			ContextSummarized{Turn: 3, Folded: []string{"m2"}, Steps: 1})},
		{"summary after an act call", contextHistory(ModelCalled{Model: "m", Purpose: "act"},
			ContextSummarized{Turn: 3, Folded: []string{"m2"}, Steps: 1})},
		{"model called after overflow", contextHistory(overflow, ModelCalled{Model: "m"})},
		{"prepared after overflow", contextHistory(overflow, ContextPrepared{Turn: 4, Tokens: 1, Budget: 1000})},
		{"failed after overflow", contextHistory(overflow, RunFinished{Status: StatusFailed})},
		{"overflowed another budget", contextHistory(ContextOverflowed{Turn: 3, Tier: "T4", Needed: 3000, Budget: 2000})},
		{"plan outside a call", contextHistory(PlanUpdated{CallID: "c7", Steps: []PlanUpdate{{Step: "a", Status: "pending"}}})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Fold(tt.give); !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("Fold(%s) error %v, want ErrIllegalTransition", tt.name, err)
			}
		})
	}
}

// TestFoldContextUnchangedOnError: a refused event leaves the run as it was, the pending
// summarization call included.
func TestFoldContextUnchangedOnError(t *testing.T) {
	h := contextHistory(ModelCalled{Model: "m", Purpose: PurposeSummarize})
	r, err := Fold(h)
	if err != nil {
		t.Fatal(err)
	}
	bad := New("s1", "r1", h[0].Time, ContextPrepared{Turn: 3, Tokens: 1, Budget: 5})
	bad.Seq = r.LastSeq + 1
	bad.Source = h[0].Source
	if err := r.Apply(&bad); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("Apply(prepared for another budget) = %v, want ErrIllegalTransition", err)
	}
	ok := New("s1", "r1", h[0].Time, ContextSummarized{Turn: 3, Folded: []string{"m2"}, Steps: 1})
	ok.Seq = r.LastSeq + 1
	ok.Source = h[0].Source
	if err := r.Apply(&ok); err != nil {
		t.Errorf("Apply(summary right after its call, past a refused event) = %v, want nil", err)
	}
}

func TestContextValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		give Payload
	}{
		{"configured without tier", ContextConfigured{Budget: 10}},
		{"configured with unknown tier", ContextConfigured{Tier: "T5", Budget: 10}},
		{"configured without budget", ContextConfigured{Tier: "T0"}},
		{"configured soft above budget", ContextConfigured{Tier: "T1", Budget: 10, Soft: 11}},
		{"prepared over budget", ContextPrepared{Turn: 1, Tokens: 11, Budget: 10}},
		{"prepared turn 0", ContextPrepared{Tokens: 1, Budget: 10}},
		{"elided nothing", ContextElided{Turn: 1, IDs: []string{}}},
		{"elided empty id", ContextElided{Turn: 1, IDs: []string{""}}},
		{"elided empty argument id", ContextElided{Turn: 1, IDs: []string{}, Arguments: []string{""}}},
		{"dropped empty id", ContextElided{Turn: 1, IDs: []string{"o1"}, Dropped: []string{""}}},
		{"recalled without id", ContextRecalled{CallID: "c"}},
		{"summarized nothing", ContextSummarized{Turn: 1, Steps: 1}},
		{"overflowed within budget", ContextOverflowed{Turn: 1, Tier: "T0", Needed: 10, Budget: 10}},
		{"overflowed for an unknown reason", ContextOverflowed{Turn: 1, Tier: "T0", Needed: 11, Budget: 10, Reason: "bad luck"}},
		{"managed tier overflowed unmanaged", ContextOverflowed{Turn: 1, Tier: "T2", Needed: 11, Budget: 10, Reason: OverflowUnmanaged}},
		{"T0 overflowed by the preamble", ContextOverflowed{Turn: 1, Tier: "T0", Needed: 11, Budget: 10, Reason: OverflowPreamble, Floor: 11}},
		{"preamble overflow whose floor fits", ContextOverflowed{Turn: 1, Tier: "T1", Needed: 11, Budget: 10, Reason: OverflowPreamble, Floor: 9}},
		{"plan without steps", PlanUpdated{CallID: "c"}},
		{"plan with unknown status", PlanUpdated{CallID: "c", Steps: []PlanUpdate{{Step: "a", Status: "done"}}}},
	} {
		if err := tt.give.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", tt.name)
		}
	}
}
