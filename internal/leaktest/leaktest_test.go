package leaktest_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/leaktest"
	"go.uber.org/goleak"
)

// recorder is a testing.TB that records whether Error was called.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.failed = true }

// TestWaitsForAGoroutineOnItsWay: a goroutine that exits after goleak.VerifyNone's own retries
// (about 0.4 s) but within Wait is not a leak.
func TestWaitsForAGoroutineOnItsWay(t *testing.T) {
	before := goleak.IgnoreCurrent()
	done := make(chan struct{})
	go func() { time.Sleep(1500 * time.Millisecond); close(done) }()
	r := &recorder{TB: t}
	start := time.Now()
	leaktest.VerifyNone(r, before)
	if r.failed {
		t.Errorf("a goroutine that exits after 1.5 s was reported as a leak")
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("VerifyNone returned after %v, before the goroutine exited", took)
	}
	<-done
}

// TestReportsALeak: a goroutine still running after Wait is reported.
func TestReportsALeak(t *testing.T) {
	if testing.Short() {
		t.Skip("waits leaktest.Wait")
	}
	before := goleak.IgnoreCurrent()
	stop := make(chan struct{})
	go func() { <-stop }()
	r := &recorder{TB: t}
	leaktest.VerifyNone(r, before)
	close(stop)
	if !r.failed {
		t.Errorf("a goroutine running past Wait was not reported")
	}
}

func TestOpenFiles(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	open := leaktest.OpenFiles(dir)
	if runtime.GOOS == "linux" && (len(open) != 1 || filepath.Base(open[0]) != "held") {
		t.Errorf("OpenFiles with one file open = %v, want [.../held]", open)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if open := leaktest.OpenFiles(dir); len(open) != 0 {
		t.Errorf("OpenFiles after the file was closed = %v, want none", open)
	}
	leaktest.FilesClosed(t, dir)
}
