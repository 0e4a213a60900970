package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dittolab/ditto/internal/coding/repos"
)

// Config configures a Manager. Zero fields take defaults.
type Config struct {
	Root        string        // required; owned by one process at a time
	Timeout     time.Duration // wall clock per command; default 2m
	CPUSeconds  int           // CPU time per process of a command; default 120
	OutputBytes int           // output kept per command; default 64 KiB
	// GoCache is the Go build cache the commands share; default the process's (go env GOCACHE),
	// so that the tiny repositories compile from cache after the first run.
	GoCache string
	// NoNetNS turns the network namespace off (for platforms where it misbehaves).
	NoNetNS bool
}

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.CPUSeconds == 0 {
		c.CPUSeconds = 120
	}
	if c.OutputBytes == 0 {
		c.OutputBytes = 64 << 10
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Root == "":
		return errors.New("workspace: root is required")
	case c.Timeout < 0 || c.CPUSeconds < 0 || c.OutputBytes < 0:
		return errors.New("workspace: negative limit")
	}
	return nil
}

// Isolation says what isolation commands run under.
type Isolation struct {
	Network    string // "netns" (a new network namespace, no interface up) or "host"
	Reason     string // why the network is not isolated, when it is not
	Timeout    time.Duration
	CPUSeconds int
	CPULimit   bool // prlimit is available and applied
	OutputCap  int
}

func (i Isolation) String() string {
	s := fmt.Sprintf("network %s, timeout %s, output cap %d bytes", i.Network, i.Timeout, i.OutputCap)
	if i.CPULimit {
		s += fmt.Sprintf(", CPU %ds per process", i.CPUSeconds)
	} else {
		s += ", no CPU limit (prlimit not found)"
	}
	if i.Reason != "" {
		s += " (" + i.Reason + ")"
	}
	return s
}

// Manager creates and removes the worktrees of one root. It is safe for concurrent use.
type Manager struct {
	cfg  Config
	iso  Isolation
	lock *os.File
	env  []string

	mu      sync.Mutex
	origins map[string]*sync.Mutex // per origin: one builder at a time
}

// Open takes the root (ErrRootBusy when another process holds it), sweeps the worktrees a
// previous process left behind, and probes the isolation the platform allows.
func Open(ctx context.Context, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	cfg.Root = root
	for _, d := range []string{"origins", "wt", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrRootBusy, root, err)
	}
	if cfg.GoCache == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOCACHE").Output()
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("workspace: go env GOCACHE: %w", err)
		}
		cfg.GoCache = strings.TrimSpace(string(out))
	}
	m := &Manager{cfg: cfg, lock: lock, origins: map[string]*sync.Mutex{}}
	m.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"),
		"GOCACHE=" + cfg.GoCache, "GOPATH=" + filepath.Join(root, "home", "go"), "GOPROXY=off", "GOFLAGS=-mod=mod -buildvcs=false",
		"GOTOOLCHAIN=local", "GOTELEMETRY=off", "CGO_ENABLED=1", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "TERM=dumb",
	}
	if err := m.sweep(ctx); err != nil {
		lock.Close()
		return nil, err
	}
	m.iso = m.probe(ctx)
	return m, nil
}

// Close releases the root. Worktrees not discarded are left for the next Open to sweep.
func (m *Manager) Close() error { return m.lock.Close() }

// Isolation returns the isolation commands run under.
func (m *Manager) Isolation() Isolation { return m.iso }

// Root returns the absolute root directory.
func (m *Manager) Root() string { return m.cfg.Root }

func (m *Manager) probe(ctx context.Context) Isolation {
	iso := Isolation{Network: "host", Timeout: m.cfg.Timeout, CPUSeconds: m.cfg.CPUSeconds, OutputCap: m.cfg.OutputBytes}
	_, err := exec.LookPath("prlimit")
	iso.CPULimit = err == nil
	switch {
	case m.cfg.NoNetNS:
		iso.Reason = "network namespace turned off by configuration"
	default:
		out, err := exec.CommandContext(ctx, "unshare", "-rn", "true").CombinedOutput()
		if err != nil {
			iso.Reason = fmt.Sprintf("unshare -rn failed (%v: %s); commands can reach the network", err, strings.TrimSpace(string(out)))
		} else {
			iso.Network = "netns"
		}
	}
	return iso
}

// sweep removes every worktree under wt/ and prunes each origin's worktree records.
func (m *Manager) sweep(ctx context.Context) error {
	wt := filepath.Join(m.cfg.Root, "wt")
	entries, err := os.ReadDir(wt)
	if err != nil {
		return fmt.Errorf("workspace: sweep: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(wt, e.Name())); err != nil {
			return fmt.Errorf("workspace: sweep %s: %w", e.Name(), err)
		}
	}
	origins, _ := filepath.Glob(filepath.Join(m.cfg.Root, "origins", "*", "*"))
	for _, o := range origins {
		if _, err := m.git(ctx, o, "worktree", "prune"); err != nil {
			// An origin that git no longer reads is rebuilt on next use.
			if err := os.RemoveAll(o); err != nil {
				return fmt.Errorf("workspace: sweep %s: %w", o, err)
			}
		}
	}
	return nil
}

// Worktrees lists the names of the worktrees that exist under the root.
func (m *Manager) Worktrees() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(m.cfg.Root, "wt"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out, nil
}

// gitEnv pins what makes a commit's hash: author, committer, dates.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=ditto", "GIT_AUTHOR_EMAIL=ditto@localhost", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=ditto", "GIT_COMMITTER_EMAIL=ditto@localhost", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
}

func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(m.env), gitEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("workspace: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// origin returns the origin repository of in, building it on first use, and its commit.
func (m *Manager) origin(ctx context.Context, in *repos.Instance) (dir, commit string, err error) {
	// The tree's digest is in the key: two task files may name different trees alike (a
	// user's module and its next version), and an origin left by an earlier process must not
	// stand for a tree that changed since.
	key := in.Repo + "/" + in.ID + "-" + shortDigest(in.Digest)
	m.mu.Lock()
	mu := m.origins[key]
	if mu == nil {
		mu = &sync.Mutex{}
		m.origins[key] = mu
	}
	m.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	dir = filepath.Join(m.cfg.Root, "origins", filepath.FromSlash(key))
	if out, err := m.git(ctx, dir, "rev-parse", "HEAD"); err == nil {
		return dir, strings.TrimSpace(out), nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(m.cfg.Root, "tmp"), "origin-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	for p, body := range in.Files {
		f := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			return "", "", err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", key}} {
		if _, err := m.git(ctx, tmp, args...); err != nil {
			return "", "", err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", "", err
	}
	out, err := m.git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return "", "", err
	}
	return dir, strings.TrimSpace(out), nil
}

// Create makes the worktree name (a run's identity, used as a directory name) of instance in,
// at the instance's commit. A worktree of the same name left by an earlier attempt is removed
// first.
func (m *Manager) Create(ctx context.Context, name string, in *repos.Instance) (*Workspace, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("workspace: bad worktree name %q", name)
	}
	origin, commit, err := m.origin(ctx, in)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(m.cfg.Root, "wt", name)
	if _, err := os.Stat(dir); err == nil {
		_, _ = m.git(ctx, origin, "worktree", "remove", "--force", dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		_, _ = m.git(ctx, origin, "worktree", "prune")
	}
	if _, err := m.git(ctx, origin, "worktree", "add", "-q", "--detach", dir, commit); err != nil {
		return nil, err
	}
	return &Workspace{m: m, Dir: dir, Name: name, Origin: origin, Commit: commit, Instance: in}, nil
}

// OpenSlot opens the first root base/0, base/1, … (up to base/63) that no other process holds.
// A process that died leaves its slot free with its worktrees in it; the next process to open
// that slot sweeps them. cfg.Root is ignored.
func OpenSlot(ctx context.Context, base string, cfg Config) (*Manager, error) {
	var err error
	for i := range 64 {
		cfg.Root = filepath.Join(base, fmt.Sprint(i))
		var m *Manager
		if m, err = Open(ctx, cfg); !errors.Is(err, ErrRootBusy) {
			return m, err
		}
	}
	return nil, err
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
