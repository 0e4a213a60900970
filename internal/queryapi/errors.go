package queryapi

import "errors"

// Sentinel errors.
var (
	ErrBadRequest   = errors.New("api: bad request")
	ErrUnauthorized = errors.New("api: unauthorized")
	ErrNoServer     = errors.New("api: no analyzer is serving this data directory")
	ErrConfig       = errors.New("api: invalid config")
	ErrExport       = errors.New("api: export failed")
	// ErrTruncated reports a statement run by a Querier whose result the server cut at its
	// row limit.
	ErrTruncated = errors.New("api: result larger than the server's row limit")
)

// StatusError is a non-2xx answer from the analyzer's API, as the Client reports it.
type StatusError struct {
	Status  int
	Kind    string // the error kind in the answer (refused, timeout, query, …)
	Message string
}

func (e *StatusError) Error() string {
	if e.Kind != "" {
		return "api: " + e.Kind + ": " + e.Message
	}
	return "api: " + e.Message
}
