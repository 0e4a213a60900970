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
	// ErrImplausibleTime: an event dated outside the window around its arrival (Window).
	ErrImplausibleTime = errors.New("ingest: event time out of range")
	// ErrTokenBusy: a token holds as many requests at once as one token may
	// (Config.MaxConcurrentPerToken).
	ErrTokenBusy = errors.New("ingest: too many requests at once for this token")
)
