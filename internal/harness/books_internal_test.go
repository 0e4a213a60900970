package harness

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
)

// TestEmitRefusesWhatTheFoldRefuses: an event that would make the history ill-formed is
// reported as ErrHistory and never reaches the Emitter, and the books stay as they were.
func TestEmitRefusesWhatTheFoldRefuses(t *testing.T) {
	var got []events.Type
	r := &runner{ctx: context.Background(), em: EmitterFunc(func(_ context.Context, p events.Payload) error {
		got = append(got, p.EventType())
		return nil
	})}
	if err := r.emit(events.RunStarted{Task: "t", Model: "m", Condition: condition.Baseline}); err != nil {
		t.Fatalf("emit(run.started) error %v", err)
	}
	err := r.emit(events.StateExited{State: "A", Outcome: "ok"}) // a state never entered
	if !errors.Is(err, ErrHistory) || !errors.Is(err, events.ErrIllegalTransition) {
		t.Fatalf("emit(state.exited A) error = %v, want ErrHistory wrapping ErrIllegalTransition", err)
	}
	if err := r.emit(events.StateEntered{State: "A"}); err != nil {
		t.Fatalf("emit(state.entered A) after the refusal: %v", err)
	}
	want := []events.Type{events.TypeRunStarted, events.TypeStateEntered}
	if !slices.Equal(got, want) || r.books.LastSeq != 2 || r.books.Current != "A" {
		t.Fatalf("emitted %v (books at seq %d, in %q), want %v", got, r.books.LastSeq, r.books.Current, want)
	}
}
