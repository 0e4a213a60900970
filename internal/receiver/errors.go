package receiver

import "errors"

// Sentinel errors.
var (
	ErrConfig       = errors.New("ingest: invalid config")
	ErrUnauthorized = errors.New("ingest: missing or unknown bearer token")
	ErrForbidden    = errors.New("ingest: token may not write this study")
	ErrThrottled    = errors.New("ingest: too many events awaiting JetStream acknowledgement")
	ErrTooLarge     = errors.New("ingest: request body too large")
	ErrNotStored    = errors.New("ingest: JetStream did not acknowledge")
)
