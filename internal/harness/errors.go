package harness

import "errors"

var (
	// ErrSpec reports an invalid RunSpec.
	ErrSpec = errors.New("harness: invalid run spec")
	// ErrEmit wraps an Emitter failure: the run stopped and its events are incomplete.
	ErrEmit = errors.New("harness: emit failed")
	// ErrHistory reports an event the run fold (events.Run) refuses, which the harness therefore
	// did not emit: a defect of the harness, never of the model. The run stopped; its events
	// are incomplete.
	ErrHistory = errors.New("harness: event refused by the run fold")
)
