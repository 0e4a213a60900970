package loadgen

import "errors"

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("loadgen: invalid config")

// ErrNotDrained is returned (wrapped, with the Report) when the analyzer had not committed every
// published event by the end of Config.DrainTimeout.
var ErrNotDrained = errors.New("loadgen: analyzer did not catch up")
