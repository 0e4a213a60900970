// Package clitest builds ditto's binaries and runs them as a user would, for tests of what
// they print and the status they exit with.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is a main package, built on first use into a temporary directory and reused by every
// test of the test binary; Remove deletes it (from TestMain).
type Binary struct {
	Pkg     string // import path of the main package
	Tags    string // build tags
	CGO     bool   // build with cgo; without, CGO_ENABLED=0 as the Makefile builds the producer and the worker
	Version string // set as internal/cli.version, as the Makefile does; empty: none

	once sync.Once
	dir  string
	path string
	err  error
}

// Name is the binary's name: the last element of Pkg.
func (b *Binary) Name() string { return path.Base(b.Pkg) }

// Path builds the binary once and returns its path; a failed build fails t.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(b.build)
	if b.err != nil {
		t.Fatalf("build %s: %v", b.Pkg, b.err)
	}
	return b.path
}

func (b *Binary) build() {
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.err = err
		return
	}
	sweepStale()
	if b.dir, b.err = os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid())); b.err != nil {
		return
	}
	b.path = filepath.Join(b.dir, b.Name())
	// -buildvcs=false: a test does not depend on git being usable here.
	args := []string{"build", "-buildvcs=false", "-o", b.path}
	if b.Tags != "" {
		args = append(args, "-tags", b.Tags)
	}
	if b.Version != "" {
		args = append(args, "-ldflags", "-X github.com/dittolab/ditto/internal/cli.version="+b.Version)
	}
	cmd := exec.Command(goTool, append(args, b.Pkg)...)
	cmd.Env = os.Environ()
	if !b.CGO {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = errors.New(err.Error() + ": " + string(out))
	}
}

// dirPrefix starts the name of each build directory, followed by the building process's id.
const dirPrefix = "ditto-clitest-"

// sweepStale removes the build directories of test processes that have ended without removing
// theirs (killed, or stopped by go test's -timeout): an analyzer is 150 MB.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), dirPrefix), "-")
		n, err := strconv.Atoi(pid)
		if err != nil || n == os.Getpid() {
			continue
		}
		// Signal 0 checks that the process exists; any answer but "done" (alive, or another
		// user's) keeps its directory.
		if p, err := os.FindProcess(n); err == nil && errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone) {
			os.RemoveAll(d)
		}
	}
}

// Remove deletes the built binary, if any.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Result is what a run printed and its exit status.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Output is stdout and stderr together.
func (r Result) Output() string { return r.Stdout + r.Stderr }

// RunTimeout bounds one run.
const RunTimeout = 2 * time.Minute

// Run runs the binary with args, in dir when not empty, with this process's environment less
// every DITTO_ variable, plus env ("NAME=value"). A run that does not end within RunTimeout,
// or that cannot start, fails t.
func (b *Binary) Run(t testing.TB, dir string, env []string, args ...string) Result {
	t.Helper()
	bin := b.Path(t) // built before the run's time starts
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DITTO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %q did not end within %v; stderr:\n%s", b.Name(), args, RunTimeout, stderr.String())
	case errors.As(err, &ee):
	case err != nil:
		t.Fatalf("%s %q: %v", b.Name(), args, err)
	}
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
}

// UnsetEnv makes every DITTO_ variable of this process empty, which ditto's flags read as
// unset, for the test.
func UnsetEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "DITTO_") {
			t.Setenv(name, "")
		}
	}
}

// CheckSection fails t when the part of the file at path between the lines
// "<!-- begin NAME: … -->" and "<!-- end NAME -->" is not want; with update, it writes want there
// instead.
func CheckSection(t *testing.T, path, name, want string, update bool) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin := strings.Index(doc, "<!-- begin "+name+":")
	end := strings.Index(doc, "<!-- end "+name+" -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the lines <!-- begin %s: … --> and <!-- end %s -->", path, name, name)
	}
	begin += strings.Index(doc[begin:], "\n") + 1
	if doc[begin:end] == want {
		return
	}
	if !update {
		t.Errorf("%s: the section %s is stale; rewrite it with go test -run %s -update in this package", path, name, t.Name())
		return
	}
	if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
