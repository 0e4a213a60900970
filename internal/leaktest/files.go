package leaktest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// OpenFiles returns the files under dir (the directory itself excluded) that this process
// still has open, from /proc/self/fd; on a system without it (not Linux), none.
func OpenFiles(dir string) []string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue
		}
		if strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}

// FilesClosed stops the test (t.Fatal) when this process still has a file under dir open, after
// waiting up to Wait for it to be closed. It is for a test that has closed all it opened
// there: a DuckDB database whose file stays open is one whose instance lives on (a connection,
// statement or result that was never closed keeps it), and DuckDB's instance cache then spins
// without end in the next open of the same file in this process, which would hang the test
// rather than fail it.
func FilesClosed(t testing.TB, dir string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	deadline := time.Now().Add(Wait)
	for {
		open := OpenFiles(dir)
		if len(open) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("files still open %v after everything that used them was closed", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
