package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spinForProfile uses the CPU until deadline.
func spinForProfile(deadline time.Time) float64 {
	x := 1.0
	for time.Now().Before(deadline) {
		for i := 0; i < 100_000; i++ {
			x = math.Sqrt(x + float64(i))
		}
	}
	return x
}

func TestCPUProfileEnv(t *testing.T) {
	prog := Program{Name: "prog", Commands: []Command{{Name: "spin", Run: func(_ context.Context, fs *flag.FlagSet, args []string) error {
		if err := Parse(fs, args); err != nil {
			return err
		}
		// 300 ms of CPU at the profiler's 100 samples a second: about 30 samples.
		_ = spinForProfile(time.Now().Add(300 * time.Millisecond))
		return nil
	}}}}
	path := filepath.Join(t.TempDir(), "spin.pprof")
	t.Setenv(CPUProfileEnv, path)
	var stdout, stderr bytes.Buffer
	if code := prog.Run(context.Background(), []string{"spin"}, &stdout, &stderr); code != 0 {
		t.Fatalf("Run(spin) = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	// A pprof profile is a gzipped protocol buffer whose string table names the functions
	// sampled: the spinning one must be there.
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no profile written: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile %s is not gzipped: %v", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("spinForProfile")) {
		t.Errorf("the profile (%d bytes) does not name spinForProfile, the function that used the CPU", len(raw))
	}

	// A file that cannot be created fails the command before it runs, naming the variable.
	t.Setenv(CPUProfileEnv, filepath.Join(t.TempDir(), "missing", "x.pprof"))
	stderr.Reset()
	if code := prog.Run(context.Background(), []string{"spin"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), CPUProfileEnv) {
		t.Errorf("Run(spin) with an unwritable profile = %d, stderr %q; want 1 and an error naming %s", code, stderr.String(), CPUProfileEnv)
	}
}
