package condition

import "errors"

// ErrUnknown is returned by Parse and New for an unknown condition or component name.
var ErrUnknown = errors.New("condition: unknown condition or component")
