package worker

import "errors"

// Sentinel errors.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("worker: invalid config")
	// ErrNoSim is returned for a job on the simulated models when this worker hosts none.
	ErrNoSim = errors.New("worker: job needs the simulated models, and this worker hosts none (run with --sim)")
	// ErrIllFormed reports a harness history that does not fold; the run is not recorded.
	ErrIllFormed = errors.New("worker: the harness emitted an ill-formed history")
	// ErrPanic reports a run whose harness or model panicked; the worker survives it.
	ErrPanic = errors.New("worker: the run panicked")
	// ErrSuperseded reports an attempt that lost its claim on the run: another attempt's
	// run.started, or a finished attempt, was stored first (see the package doc's "One
	// recorded attempt per run"). The attempt stops without recording an outcome.
	ErrSuperseded = errors.New("worker: another attempt claimed the run")
)
