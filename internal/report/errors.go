package report

import "errors"

// Sentinel errors, wrapped with context; test with errors.Is.
var (
	// ErrInvalid reports options or a report out of range.
	ErrInvalid = errors.New("report: invalid")
	// ErrNoData reports a drift window without any production run.
	ErrNoData = errors.New("report: no data")
)
