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

// heldForProfile is what allocateForProfile keeps: the heap profile must find it live.
var heldForProfile [][]byte

func allocateForProfile() {
	for range 64 {
		heldForProfile = append(heldForProfile, make([]byte, 64<<10))
	}
}

// readProfile returns the decompressed bytes of the pprof profile at path.
func readProfile(t *testing.T, path string) []byte {
	t.Helper()
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
	return raw
}

func TestHeapProfileEnv(t *testing.T) {
	prog := Program{Name: "prog", Commands: []Command{{Name: "hold", Run: func(_ context.Context, fs *flag.FlagSet, args []string) error {
		if err := Parse(fs, args); err != nil {
			return err
		}
		allocateForProfile()
		time.Sleep(450 * time.Millisecond) // a few periodic profiles
		return nil
	}}}}
	defer func() { heldForProfile = nil }()
	dir := t.TempDir()
	path := filepath.Join(dir, "hold.heap")
	t.Setenv(HeapProfileEnv, path)
	t.Setenv(HeapProfileEveryEnv, "100ms")
	var stdout, stderr bytes.Buffer
	if code := prog.Run(context.Background(), []string{"hold"}, &stdout, &stderr); code != 0 {
		t.Fatalf("Run(hold) = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	// The last profile, at the end, names the function whose 4 MiB are live (the sampling
	// rate, 512 KiB, samples them).
	if raw := readProfile(t, path); !bytes.Contains(raw, []byte("allocateForProfile")) {
		t.Errorf("the heap profile (%d bytes) does not name allocateForProfile, which holds 4 MiB", len(raw))
	}
	periodic, err := filepath.Glob(path + ".*s")
	if err != nil || len(periodic) == 0 {
		t.Fatalf("no periodic heap profile beside %s (%v) with %s=100ms over 450 ms", path, err, HeapProfileEveryEnv)
	}
	for _, p := range periodic {
		_ = readProfile(t, p)
	}

	// A period that is not a duration fails the command before it runs, naming the variable.
	t.Setenv(HeapProfileEveryEnv, "often")
	stderr.Reset()
	if code := prog.Run(context.Background(), []string{"hold"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), HeapProfileEveryEnv) {
		t.Errorf("Run(hold) with %s=often = %d, stderr %q; want 1 and an error naming it", HeapProfileEveryEnv, code, stderr.String())
	}
}
