// Package browsertest drives the system's Chromium for the tests that read ditto's pages as a
// user sees them: Debian's chromium, headless, and for the scripted ones Playwright
// (playwright-core, pinned in this directory's package-lock.json; it never downloads a browser)
// under Node.js. The Node scripts live beside their tests (internal/report/e2e,
// internal/console/e2e) and import launch.mjs from this directory, which launches Chromium the
// same way for all of them; playwright-core is resolved from this directory's node_modules,
// installed once by Setup.
//
// Without chromium, node or npm a browser test skips, except under CI (CI set), where it fails:
// .ci/run installs them.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// Need returns the path of a program a browser test needs: the first of candidates found,
// else name on PATH. Without it the test skips, or fails under CI.
func Need(t testing.TB, name string, candidates ...string) string {
	t.Helper()
	for _, c := range append(candidates, name) {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found under CI: .ci/run installs it (apt-get install -y chromium nodejs npm)", name)
	}
	t.Skipf("%s not installed; skipping the browser test (apt-get install -y chromium nodejs npm)", name)
	return ""
}

// Chromium returns Debian's chromium (see Need).
func Chromium(t testing.TB) string {
	t.Helper()
	return Need(t, "chromium", "/usr/bin/chromium")
}

// Playwright runs Node scripts that drive Chromium through playwright-core.
type Playwright struct {
	Node, Chromium string
}

// Setup finds chromium, node and npm (see Need) and installs the pinned playwright-core into
// this package's directory unless it is there already (npm ci, never a browser download). The
// installation holds a file lock: the tests of several packages, run as parallel processes,
// share the directory.
func Setup(t testing.TB, ctx context.Context) *Playwright {
	t.Helper()
	p := &Playwright{Chromium: Chromium(t), Node: Need(t, "node")}
	npm := Need(t, "npm")
	dir := Dir(t)
	lock, err := os.OpenFile(filepath.Join(dir, "node_modules.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("browsertest: lock %s: %v", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it too
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err == nil {
		return p
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return p
}

// Run runs a Node script in its directory with env added to the test's environment, CHROMIUM
// set to the browser and BROWSER_PROFILE to a fresh user data directory (what launch.mjs
// reads). It logs the script's output, and fails the test when the script exits non-zero.
func (p *Playwright) Run(t testing.TB, ctx context.Context, script string, env ...string) {
	t.Helper()
	script, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, p.Node, script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(append(os.Environ(), "CHROMIUM="+p.Chromium, "BROWSER_PROFILE="+t.TempDir()), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", filepath.Base(script), out)
	if err != nil {
		t.Fatalf("the browser check %s failed: %v", filepath.Base(script), err)
	}
}

// Dir is this package's directory, where package.json, launch.mjs and node_modules are.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("browsertest: cannot locate the package's directory")
	}
	return filepath.Dir(file)
}

// ArtifactsDir is where a browser test saves its screenshots: $DITTO_ARTIFACTS/name when set
// (CI keeps it), else a directory of the test's own.
func ArtifactsDir(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("DITTO_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}
