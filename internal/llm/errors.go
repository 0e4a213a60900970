package llm

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("llm: invalid config")
	// ErrNoChoices is returned when an endpoint answers without any choice.
	ErrNoChoices = errors.New("llm: response has no choices")
)

// Retry records one failed attempt that was retried.
type Retry struct {
	Attempt    int           // the failed attempt, from 1
	StatusCode int           // HTTP status, 0 for a transport error or timeout
	Reason     string        // short description, never containing secrets
	Backoff    time.Duration // the wait before the next attempt
}

// CallError is returned by Chat when a call fails for good: after a non-retryable error, or when
// the retries are exhausted. It carries the retries made so the caller can record them.
type CallError struct {
	Attempts   int
	StatusCode int // of the last attempt, 0 if none
	Retryable  bool
	Retries    []Retry
	Err        error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("llm: chat failed after %d attempt(s): %v", e.Attempts, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }
