package events

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Wrapped errors carry the field or position at fault; test with errors.Is.
var (
	ErrMalformed      = errors.New("events: malformed JSON")
	ErrUnknownType    = errors.New("events: unknown event type")
	ErrUnknownVersion = errors.New("events: unknown schema version")
	ErrMissingField   = errors.New("events: missing required field")
	ErrInvalidField   = errors.New("events: invalid field")
	ErrUnsafeToken    = errors.New("events: unsafe subject token")
	ErrTooLarge       = errors.New("events: event too large")
	ErrNotCanonical   = errors.New("events: value cannot be canonicalized")
	// ErrInvalidText, ErrDuplicateKey and ErrKeyCase are kinds of ErrMalformed (errors.Is
	// holds for each): JSON that encoding/json reads but other readers of the same bytes
	// (DuckDB) read differently or refuse. See Decode. ErrKeyCase is a payload key that differs
	// from a field's name in case alone: encoding/json reads it as the field, DuckDB's JSON
	// paths do not.
	ErrInvalidText  = fmt.Errorf("%w: string is not valid Unicode", ErrMalformed)
	ErrDuplicateKey = fmt.Errorf("%w: duplicate key", ErrMalformed)
	ErrKeyCase      = fmt.Errorf("%w: key differs from a field's name in case alone", ErrMalformed)

	// Fold errors: each kind of ill-formed history has its own.
	ErrNotStarted        = errors.New("events: run did not start with run.started")
	ErrDuplicateSequence = errors.New("events: duplicate sequence number")
	ErrOutOfOrder        = errors.New("events: sequence number out of order")
	ErrAfterFinish       = errors.New("events: event after run.finished")
	ErrIllegalTransition = errors.New("events: illegal transition")
	ErrWrongRun          = errors.New("events: event belongs to another run")
)

// FieldError names the field of an event that is missing or invalid.
type FieldError struct {
	Field string // JSON path of the field, e.g. "payload.tool"
	Err   error  // ErrMissingField or ErrInvalidField (or a more specific sentinel)
	Msg   string // what was wrong, for people
}

func (e *FieldError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Field)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, e.Field, e.Msg)
}

func (e *FieldError) Unwrap() error { return e.Err }

func missing(field string) error { return &FieldError{Field: field, Err: ErrMissingField} }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: ErrInvalidField, Msg: fmt.Sprintf(format, args...)}
}

// MaxCount is the largest attempt (an envelope's, a plan's or a retry's), input or seed index
// (a run.started's), number of transport retries and of prompt or completion tokens (a
// model.called's) an event may give: the warehouse stores the counts as 32-bit integers
// (DuckDB's INTEGER) and sums the tokens, so a larger one would be stored wrapped round (an
// attempt's events under another attempt), make the queries of a view that read it fail, or
// overflow a run's sums.
const MaxCount = math.MaxInt32

// checkCount checks an integer field that counts from least and is stored as a 32-bit integer
// (or summed: tokens).
func checkCount[N int | int64](field string, n, least N) error {
	if n < least || n > MaxCount {
		return invalid(field, "must be from %d to %d, got %d", least, MaxCount, n)
	}
	return nil
}
