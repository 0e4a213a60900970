//go:build !unix

package worker

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
