package sqlguard

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrRefused marks a query the guard will not run (see RefusedError for why).
	ErrRefused = errors.New("sqlguard: query refused")
	// ErrTimeout marks a query stopped because it ran longer than its timeout. It is reported
	// together with context.DeadlineExceeded.
	ErrTimeout = errors.New("sqlguard: query timed out")
	// ErrEmpty is an empty query.
	ErrEmpty = errors.New("sqlguard: empty query")
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("sqlguard: invalid config")
)

// Refusal kinds, in RefusedError.Kind.
const (
	KindStatement = "statement" // not a single SELECT
	KindMultiple  = "multiple"  // more than one statement
	KindFunction  = "function"  // a table or scalar function that is not allowed
	KindFile      = "file"      // a table name that is a path or URL (replacement scan)
	KindSyntax    = "syntax"    // DuckDB could not parse the text
)

// RefusedError says why a query was refused. It wraps ErrRefused.
type RefusedError struct {
	Kind   string // one of the Kind constants
	Name   string // the statement keyword, function or table name at fault
	Reason string // human-readable explanation
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("sqlguard: query refused: %s", e.Reason)
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }
