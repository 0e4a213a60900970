package condition

import "errors"

var (
	// ErrUnknown is returned by Parse and New for an unknown condition or component name.
	ErrUnknown = errors.New("condition: unknown condition or component")
	// ErrContext is returned for a context-management setting out of its range.
	ErrContext = errors.New("condition: invalid context management")
)
