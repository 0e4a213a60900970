package llm

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("llm: invalid config")
	// ErrMissingKey reports an API key variable that is unset or empty (wrapped with ErrConfig).
	ErrMissingKey = errors.New("llm: API key missing")
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

// KindContextLength is the CallError.Kind of a request the endpoint refused because the
// conversation is longer than the model's context window (the run overflowed). Every other
// kind is one of the events.Cause* kinds.
const KindContextLength = "context_length"

// KindCancelled is the CallError.Kind of a call whose context ended: the caller gave up.
const KindCancelled = "cancelled"

// CallError is returned by Chat when a call fails for good: after a permanent failure (at the
// first attempt), or when the retries of a transient one are exhausted. It carries the retries
// made so the caller can record them, and what failed (Kind, Permanent, Detail) so that the
// caller can record the cause.
type CallError struct {
	Attempts   int
	StatusCode int // of the last attempt, 0 if none
	// Retryable says the last failure was transient (timeouts, 408, 409, 429, 5xx, refused or
	// reset connections): it was retried until the retries ran out. Permanent failures
	// (401/403, 404, an unknown model, other 4xx, an exhausted quota) are not retried.
	Retryable bool
	// Kind is what failed: an events.Cause* kind, KindContextLength or KindCancelled.
	Kind string
	// Detail describes the failure for people; it never holds the API key (the endpoint's
	// own message is left out of 401 and 403 answers, which may quote part of the key).
	Detail  string
	Retries []Retry
	Err     error
}

// Permanent reports whether trying again cannot help.
func (e *CallError) Permanent() bool { return !e.Retryable && e.Kind != KindCancelled }

func (e *CallError) Error() string {
	return fmt.Sprintf("llm: chat failed after %d attempt(s): %v", e.Attempts, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }
