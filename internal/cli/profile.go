package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
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

// HeapProfileEnv names the environment variable that has a command of any of ditto's binaries
// write heap profiles (runtime/pprof's "heap": the objects live at a garbage collection, with
// where they were allocated; `go tool pprof -sample_index=inuse_space`) to the file it names,
// when the command ends; with HeapProfileEveryEnv also every that long while it runs, to the
// file named with the time since the start appended (FILE.300s, FILE.600s, …; FILE.100ms, … for
// a period under a second). Two of them give what a long-running process keeps more of as it
// goes (`go tool pprof -base FILE.300s FILE.3600s`), which its memory figures alone do not say.
const (
	HeapProfileEnv      = "DITTO_HEAPPROFILE"
	HeapProfileEveryEnv = "DITTO_HEAPPROFILE_EVERY"
)

// writeHeapProfile collects the garbage, so that the profile's in-use figures are what is
// live now, and writes the heap profile to path.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cli: %s: %w", HeapProfileEnv, err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("cli: %s: %w", HeapProfileEnv, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cli: %s: %w", HeapProfileEnv, err)
	}
	return nil
}

// startHeapProfiles checks that path can be written (a command must not run for an hour to
// find out at its end that it cannot) and writes a heap profile every `every` (0: never) until
// the returned function is called, which writes the last one to path itself. A periodic
// profile that cannot be written is reported to stderr, once; the command goes on.
func startHeapProfiles(path string, every time.Duration, stderr io.Writer) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cli: %s: %w", HeapProfileEnv, err)
	}
	f.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	if every > 0 {
		start := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			reported := false
			for {
				select {
				case <-done:
					return
				case now := <-t.C:
					if err := writeHeapProfile(periodicName(path, now.Sub(start), every)); err != nil && !reported {
						fmt.Fprintf(stderr, "%v (periodic heap profiles)\n", err)
						reported = true
					}
				}
			}
		}()
	}
	return func() error {
		close(done)
		wg.Wait()
		return writeHeapProfile(path)
	}, nil
}

// periodicName names the periodic profile taken `since` after the start: in seconds, or in
// milliseconds when the period is under a second (whole seconds would give two the same name).
func periodicName(path string, since, every time.Duration) string {
	if every < time.Second {
		return fmt.Sprintf("%s.%dms", path, since.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%s.%ds", path, int(since.Round(time.Second).Seconds()))
}

// heapProfileEvery reads HeapProfileEveryEnv: a Go duration, or empty or 0 for never.
func heapProfileEvery() (time.Duration, error) {
	v := os.Getenv(HeapProfileEveryEnv)
	if v == "" || v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("cli: %s=%q: want a duration such as 5m (0: none)", HeapProfileEveryEnv, v)
	}
	return d, nil
}
