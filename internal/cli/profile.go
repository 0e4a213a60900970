package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// CPUProfileEnv names the environment variable that has a command of any of ditto's binaries
// write a CPU profile of its whole run (runtime/pprof, for `go tool pprof`) to the file it
// names: how a process under load (the analyzer ingesting, the embedded broker's host) is
// profiled where it runs, without a debug listener.
const CPUProfileEnv = "DITTO_CPUPROFILE"

// startCPUProfile starts profiling into path and returns the function that stops it and
// closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cli: %s: %w", CPUProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cli: %s: %w", CPUProfileEnv, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
