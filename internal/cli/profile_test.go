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
	if raw := readProfile(t, path); !bytes.Contains(raw, []byte("spinForProfile")) {
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

// allocateForProfile holds 64 MiB in 1 MiB pieces: at the profiler's mean sampling interval of
// 512 KiB each piece is sampled with probability 1 - e^-2, and none of them with e^-128.
func allocateForProfile() {
	for range 64 {
		heldForProfile = append(heldForProfile, make([]byte, 1<<20))
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
	dir := t.TempDir()
	path := filepath.Join(dir, "hold.heap")
	periodic := func() []string {
		names, _ := filepath.Glob(path + ".*ms")
		return names
	}
	prog := Program{Name: "prog", Commands: []Command{{Name: "hold", Run: func(_ context.Context, fs *flag.FlagSet, args []string) error {
		if err := Parse(fs, args); err != nil {
			return err
		}
		allocateForProfile()
		// Until two periodic profiles are written (each named by its time since the start).
		for deadline := time.Now().Add(30 * time.Second); len(periodic()) < 2 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}}}}
	defer func() { heldForProfile = nil }()
	t.Setenv(HeapProfileEnv, path)
	t.Setenv(HeapProfileEveryEnv, "100ms")
	var stdout, stderr bytes.Buffer
	if code := prog.Run(context.Background(), []string{"hold"}, &stdout, &stderr); code != 0 {
		t.Fatalf("Run(hold) = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	// The last profile, at the end, names the function whose 64 MiB are live.
	if raw := readProfile(t, path); !bytes.Contains(raw, []byte("allocateForProfile")) {
		t.Errorf("the heap profile (%d bytes) does not name allocateForProfile, which holds 64 MiB", len(raw))
	}
	names := periodic()
	if len(names) < 2 {
		t.Fatalf("periodic heap profiles %v beside %s with %s=100ms, want two or more", names, path, HeapProfileEveryEnv)
	}
	for _, p := range names {
		_ = readProfile(t, p)
	}

	// A period that is not a duration, or a file that cannot be created, fails the command
	// before it runs, naming the variable.
	for _, tt := range []struct{ env, path, every string }{
		{HeapProfileEveryEnv, path, "often"},
		{HeapProfileEnv, filepath.Join(dir, "missing", "x.heap"), "1m"},
	} {
		t.Setenv(HeapProfileEnv, tt.path)
		t.Setenv(HeapProfileEveryEnv, tt.every)
		stderr.Reset()
		if code := prog.Run(context.Background(), []string{"hold"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.env) {
			t.Errorf("Run(hold) with %s=%s, %s=%s: %d, stderr %q; want 1 and an error naming %s",
				HeapProfileEnv, tt.path, HeapProfileEveryEnv, tt.every, code, stderr.String(), tt.env)
		}
	}
}

func TestPeriodicName(t *testing.T) {
	for _, tt := range []struct {
		since, every time.Duration
		want         string
	}{
		{300 * time.Second, 5 * time.Minute, "f.300s"},
		{299600 * time.Millisecond, 5 * time.Minute, "f.300s"},
		{200 * time.Millisecond, 100 * time.Millisecond, "f.200ms"},
	} {
		if got := periodicName("f", tt.since, tt.every); got != tt.want {
			t.Errorf("periodicName(f, %v, %v) = %q, want %q", tt.since, tt.every, got, tt.want)
		}
	}
}
