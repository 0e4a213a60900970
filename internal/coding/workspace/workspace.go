package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dittolab/ditto/internal/coding/repos"
)

// Workspace is one run's worktree. Its methods are safe for use by one goroutine at a time.
type Workspace struct {
	m        *Manager
	Dir      string // absolute path of the worktree
	Name     string
	Origin   string // the origin repository
	Commit   string // the instance's commit, checked out detached
	Instance *repos.Instance

	discarded bool
}

// Resolve maps p, a path relative to the worktree as an agent gives it, to an absolute path
// inside the worktree, and returns its clean relative form too. Absolute paths, paths through
// ".." out of the tree, paths into .git, and paths whose existing part resolves through a
// symlink to outside the worktree are refused with ErrEscape.
func (w *Workspace) Resolve(p string) (abs, rel string, err error) {
	if w.discarded {
		return "", "", ErrDiscarded
	}
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return "", "", fmt.Errorf("%w: %q is absolute", ErrEscape, p)
	}
	rel = filepath.ToSlash(filepath.Clean(filepath.FromSlash(p)))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", fmt.Errorf("%w: %q leads out of the worktree", ErrEscape, p)
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return "", "", fmt.Errorf("%w: %q is inside .git", ErrEscape, p)
	}
	abs = filepath.Join(w.Dir, filepath.FromSlash(rel))
	// Resolve the longest existing prefix: a symlink anywhere on the way must stay inside.
	probe := abs
	for {
		real, err := filepath.EvalSymlinks(probe)
		if err == nil {
			if !inside(w.Dir, real) {
				return "", "", fmt.Errorf("%w: %q resolves through a symlink to %s", ErrEscape, p, real)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("%w: %q: %v", ErrEscape, p, err)
		}
		parent := filepath.Dir(probe)
		if parent == probe || !inside(w.Dir, parent) {
			break
		}
		probe = parent
	}
	return abs, rel, nil
}

func inside(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// allowedAbs are the absolute paths a bash command may name.
var allowedAbs = []string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin"}

// CheckCommand refuses a bash command that names a path outside the worktree: an absolute path
// (other than /dev/null and the standard streams), a ".." path component, or "~". The check is
// lexical (see the package comment); the bodies of here-documents are data, not checked.
func CheckCommand(cmd string) error {
	for _, tok := range strings.FieldsFunc(stripHeredocs(cmd), func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '|' || r == '&' || r == '(' || r == ')' ||
			r == '<' || r == '>' || r == '=' || r == '"' || r == '\'' || r == '`' || r == ','
	}) {
		switch {
		case strings.HasPrefix(tok, "/") && !slices.Contains(allowedAbs, tok):
			return fmt.Errorf("%w: the command names the absolute path %s", ErrEscape, tok)
		case strings.HasPrefix(tok, "~"):
			return fmt.Errorf("%w: the command names the home directory (%s)", ErrEscape, tok)
		case slices.Contains(strings.Split(tok, "/"), ".."):
			return fmt.Errorf("%w: the command names a parent directory (%s)", ErrEscape, tok)
		}
	}
	return nil
}

var heredocRe = regexp.MustCompile(`<<-?\s*(?:'([A-Za-z_][A-Za-z0-9_]*)'|"([A-Za-z_][A-Za-z0-9_]*)"|([A-Za-z_][A-Za-z0-9_]*))`)

// stripHeredocs removes the bodies of here-documents (the lines after a line with <<WORD, up to
// the line WORD).
func stripHeredocs(cmd string) string {
	lines := strings.Split(cmd, "\n")
	var out []string
	var ends []string
	for _, ln := range lines {
		if len(ends) > 0 {
			if strings.TrimLeft(ln, "\t") == ends[0] {
				ends = ends[1:]
			}
			continue
		}
		out = append(out, ln)
		for _, m := range heredocRe.FindAllStringSubmatch(ln, -1) {
			ends = append(ends, m[1]+m[2]+m[3])
		}
	}
	return strings.Join(out, "\n")
}

// Result is the outcome of one command.
type Result struct {
	Output    []byte // stdout and stderr interleaved, at most the output cap
	Bytes     int    // output produced, including what the cap dropped
	Truncated bool
	ExitCode  int // -1 when the command did not run to an exit (timeout, signal)
	TimedOut  bool
	Duration  time.Duration
}

// Exec runs argv in the worktree under the Manager's isolation and limits. Only a failure to
// start the command is an error; its exit status, timeout and output are in the Result.
func (w *Workspace) Exec(ctx context.Context, argv ...string) (Result, error) {
	if w.discarded {
		return Result{}, ErrDiscarded
	}
	m := w.m
	full := argv
	if m.iso.CPULimit {
		full = append([]string{"prlimit", fmt.Sprintf("--cpu=%d", m.cfg.CPUSeconds), "--"}, full...)
	}
	if m.iso.Network == "netns" {
		full = append([]string{"unshare", "-rn", "--"}, full...)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Dir = w.Dir
	cmd.Env = m.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out := &capped{max: m.cfg.OutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	t0 := time.Now()
	err := cmd.Run()
	res := Result{Output: out.buf.Bytes(), Bytes: out.n, Truncated: out.n > out.buf.Len(), Duration: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.ExitCode, res.TimedOut = -1, true
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("workspace: run %s: %w", argv[0], err)
	}
	return res, nil
}

// Bash runs one bash command line in the worktree (see Exec).
func (w *Workspace) Bash(ctx context.Context, command string) (Result, error) {
	return w.Exec(ctx, "bash", "--noprofile", "--norc", "-c", command)
}

// capped keeps the first max bytes written and counts them all.
type capped struct {
	buf bytes.Buffer
	max int
	n   int
}

func (c *capped) Write(p []byte) (int, error) {
	c.n += len(p)
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Change is one path that differs from the instance's commit.
type Change struct {
	Path    string // relative, slash-separated
	Status  string // git's two-letter porcelain status, e.g. " M", "??", " D"
	Symlink string // the target when the path is a symlink leading out of the worktree
}

// Changes lists the paths that differ from the instance's commit (tracked changes and untracked
// files), sorted.
func (w *Workspace) Changes(ctx context.Context) ([]Change, error) {
	if w.discarded {
		return nil, ErrDiscarded
	}
	out, err := w.m.git(ctx, w.Dir, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil, err
	}
	var cs []Change
	for _, rec := range strings.Split(out, "\x00") {
		if len(rec) < 4 {
			continue
		}
		c := Change{Status: rec[:2], Path: rec[3:]}
		abs := filepath.Join(w.Dir, filepath.FromSlash(c.Path))
		if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if real, err := filepath.EvalSymlinks(abs); err != nil || !inside(w.Dir, real) {
				target, _ := os.Readlink(abs)
				c.Symlink = target
			}
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return cs, nil
}

// Revert restores paths to the instance's commit: tracked files are checked out again, files
// the commit does not have are removed.
func (w *Workspace) Revert(ctx context.Context, paths ...string) error {
	if w.discarded {
		return ErrDiscarded
	}
	for _, p := range paths {
		if err := repos.CheckPath(p); err != nil {
			return err
		}
		if _, err := w.m.git(ctx, w.Dir, "cat-file", "-e", w.Commit+":"+p); err == nil {
			if _, err := w.m.git(ctx, w.Dir, "checkout", w.Commit, "--", p); err != nil {
				return err
			}
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.Dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("workspace: revert %s: %w", p, err)
		}
	}
	return nil
}

// Diff returns git's diff of the worktree against the instance's commit (untracked files
// included as additions), restricted to paths when any are given.
func (w *Workspace) Diff(ctx context.Context, paths ...string) (string, error) {
	if w.discarded {
		return "", ErrDiscarded
	}
	// Intent-to-add makes untracked files show in the diff without staging their content.
	if _, err := w.m.git(ctx, w.Dir, "add", "-A", "-N"); err != nil {
		return "", err
	}
	args := []string{"diff", "--no-color", "--no-ext-diff", w.Commit}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	return w.m.git(ctx, w.Dir, args...)
}

// Discard removes the worktree. It is idempotent.
func (w *Workspace) Discard(ctx context.Context) error {
	if w.discarded {
		return nil
	}
	w.discarded = true
	ctx = context.WithoutCancel(ctx)
	_, gerr := w.m.git(ctx, w.Origin, "worktree", "remove", "--force", w.Dir)
	if err := os.RemoveAll(w.Dir); err != nil {
		return fmt.Errorf("workspace: discard %s: %w", w.Name, err)
	}
	if gerr != nil {
		if _, err := w.m.git(ctx, w.Origin, "worktree", "prune"); err != nil {
			return err
		}
	}
	return nil
}
