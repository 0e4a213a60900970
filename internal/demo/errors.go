package demo

import "errors"

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("demo: invalid configuration")
