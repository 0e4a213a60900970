package schedule

import "errors"

// Sentinel errors, wrapped with context; test with errors.Is.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("schedule: invalid configuration")
	// ErrWebhook reports a webhook that did not accept an alert.
	ErrWebhook = errors.New("schedule: webhook failed")
)
