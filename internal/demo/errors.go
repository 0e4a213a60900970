package demo

import "errors"

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("demo: invalid configuration")

// ErrNotDemoDir reports a data directory that holds files no demo made (see MarkerFile).
var ErrNotDemoDir = errors.New("demo: not a demo directory")
