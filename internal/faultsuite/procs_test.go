package faultsuite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bins are the binaries under test, built once per test binary run.
type bins struct {
	dir                                    string
	producer, worker, analyzer, natsServer string
}

var (
	binsOnce sync.Once
	binsVal  *bins
	binsErr  error
	binsDir  string
)

// repoRoot is the module root (this package is internal/faultsuite).
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// build builds the three ditto binaries (and nats-server unless DITTO_NATS_SERVER names one)
// into a directory shared by the package's tests.
func build(t *testing.T) *bins {
	t.Helper()
	binsOnce.Do(func() {
		start := time.Now()
		b := &bins{dir: binsDir}
		b.producer = filepath.Join(b.dir, "producer")
		b.worker = filepath.Join(b.dir, "harness-worker")
		b.analyzer = filepath.Join(b.dir, "analyzer")
		b.natsServer = os.Getenv("DITTO_NATS_SERVER")
		type job struct {
			out, pkg string
			cgo      bool
		}
		jobs := []job{{b.producer, "./cmd/producer", false}, {b.worker, "./cmd/harness-worker", false}, {b.analyzer, "./cmd/analyzer", true}}
		if b.natsServer == "" {
			b.natsServer = filepath.Join(b.dir, "nats-server")
			jobs = append(jobs, job{b.natsServer, "github.com/nats-io/nats-server/v2", false})
		}
		for _, j := range jobs {
			// DITTO_GOTAGS carries the Makefile's GOTAGS (e.g. duckdb_arrow for the
			// analyzer's Arrow load path), so the tests run the binaries `make build` makes.
			cmd := exec.Command("go", "build", "-tags", os.Getenv("DITTO_GOTAGS"), "-o", j.out, j.pkg)
			cmd.Dir = repoRoot()
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+map[bool]string{true: "1", false: "0"}[j.cgo])
			if out, err := cmd.CombinedOutput(); err != nil {
				binsErr = fmt.Errorf("go build %s: %v\n%s", j.pkg, err, out)
				return
			}
		}
		binsVal = b
		fmt.Printf("faulttest: built binaries in %s (%s)\n", b.dir, time.Since(start).Round(time.Millisecond))
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return binsVal
}

// proc is a child process with its output in a log file.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs bin with args; env adds to this process's environment. The process is killed when
// the test ends if it is still running.
func start(t *testing.T, dir, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{t: t, name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		if p.running() {
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- end of %s's log (%s):\n%s", name, logPath, p.tail())
		}
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("%s (pid %d) survived SIGKILL", p.name, p.pid())
	}
	p.t.Logf("SIGKILL %s (pid %d)", p.name, p.pid())
}

// stop sends SIGTERM and waits up to grace for a clean exit.
func (p *proc) stop(grace time.Duration) error {
	p.t.Helper()
	if !p.running() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s", p.name, grace)
	}
}

// wait waits for the process to exit by itself.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s; log:\n%s", p.name, timeout, p.tail())
	}
}

// tail returns the end of the process's log.
func (p *proc) tail() string {
	raw, _ := os.ReadFile(p.log)
	if len(raw) > 2500 {
		raw = raw[len(raw)-2500:]
	}
	return string(raw)
}

// run runs bin to completion and returns its stdout.
func run(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// poll calls cond every 50ms until it returns true or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var errSkip = errors.New("skip")

// testDir is the test's working directory (process logs, stores, the DuckDB file): a temporary
// one removed at the end, or, when DITTO_FAULT_KEEP names a directory, a fresh directory under
// it named after the test and kept, to read every process's whole log after a run.
func testDir(t *testing.T) string {
	t.Helper()
	keep := os.Getenv("DITTO_FAULT_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	// A subtest's name holds slashes (TestLoad/embedded/2000), which a pattern may not.
	dir, err := os.MkdirTemp(keep, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("working directory kept: %s", dir)
	return dir
}

// requireEnv skips the test unless the environment variable is set (make test-faults, make load).
func requireEnv(t *testing.T, name string) {
	t.Helper()
	if os.Getenv(name) == "" {
		t.Skipf("set %s=1 (make test-faults / make load) to run process-level tests", name)
	}
}

// startReady starts a process and waits until its log shows marker. A process that exits
// before that is started again, up to 5 times, as compose's restart policy or a Kubernetes
// Deployment would: on a loaded 2-core machine an R3 stream or consumer creation at start can
// exceed a client's API timeout, and ditto's processes exit on a failed start.
func startReady(t *testing.T, dir, name, bin string, env []string, marker string, args ...string) *proc {
	t.Helper()
	for try := 1; ; try++ {
		p := start(t, dir, name, bin, env, args...)
		var exited bool
		poll(t, 2*time.Minute, name+" ready", func() (bool, error) {
			raw, _ := os.ReadFile(p.log)
			// Only this start's output: the log file is appended to across restarts.
			if strings.Count(string(raw), marker) >= try {
				return true, nil
			}
			exited = !p.running()
			return exited, nil
		})
		if !exited {
			return p
		}
		if try == 5 {
			t.Fatalf("%s exited at start %d times; log:\n%s", name, try, p.tail())
		}
		t.Logf("%s exited at start (%v); restarting it as a restart policy would", name, p.err)
	}
}
