//go:build unix

package worker

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used, for benchmarks that
// share the machine: CPU per run does not depend on what else is running, wall time does.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
