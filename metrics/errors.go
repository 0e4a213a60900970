package metrics

import "errors"

// Sentinel errors. Functions wrap them with %w and add context, so callers
// test with errors.Is.
var (
	// ErrEmpty reports an input with no observations where at least one is
	// needed (a Mann–Whitney sample, a comparison side).
	ErrEmpty = errors.New("metrics: empty input")
	// ErrInvalidArgument reports an argument outside its domain: a negative
	// count, a probability outside [0, 1], a NaN sample, k < 1.
	ErrInvalidArgument = errors.New("metrics: invalid argument")
	// ErrInvalidRun reports a run whose numeric fields cannot be summarised
	// (negative tokens or counts, NaN or infinite latency).
	ErrInvalidRun = errors.New("metrics: invalid run")
	// ErrInvalidOptions reports Options or CompareConfig fields out of range.
	ErrInvalidOptions = errors.New("metrics: invalid options")
)
