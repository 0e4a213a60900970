package assembler

import "errors"

// Sentinel errors.
var (
	ErrConfig = errors.New("assembler: invalid config")
	// ErrRecord says a record on DITTO_SPANS could not be read (not written by the receiver).
	ErrRecord = errors.New("assembler: unreadable span record")
)
