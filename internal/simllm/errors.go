package simllm

import "errors"

var (
	// ErrInvalidPersona reports a persona definition that cannot be used (a rate outside [0,1],
	// a missing or duplicate name, a negative latency).
	ErrInvalidPersona = errors.New("simllm: invalid persona")
	// ErrInvalidConfig reports a Config that fails Validate.
	ErrInvalidConfig = errors.New("simllm: invalid config")
	// ErrNotLoopback reports an address given to Serve that is not on the loopback interface.
	ErrNotLoopback = errors.New("simllm: address is not loopback")
)
