package harness

import "errors"

var (
	// ErrSpec reports an invalid RunSpec.
	ErrSpec = errors.New("harness: invalid run spec")
	// ErrEmit wraps an Emitter failure: the run stopped and its events are incomplete.
	ErrEmit = errors.New("harness: emit failed")
)
