package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/internal/coding/distill"
	"github.com/dittolab/ditto/internal/coding/workspace"
)

// Memo remembers the commands' results of the trees it has verified, so that a tree verified
// once is not built and tested again: a verification depends on nothing but the tree's files
// (the shipped repositories' tests are deterministic and read no clock, network or environment
// that changes between runs), and a study verifies the same few trees over and over — the
// defective tree at the start of every run, then the trees of the instance's candidate patches.
// A tree is identified by the SHA-256 of its files' paths, modes and contents (.git left out).
// Trees of an instance that runs under the race detector are always verified afresh (a race
// is found or not by chance), and a result with a command that timed out is not kept (the
// machine's load, not the tree, decided it). Only the commands' outputs are reused: which test
// files changed is checked against the instance's commit every time. A Memo is safe for
// concurrent use; two runs verifying the same tree at once run the commands once.
type Memo struct {
	mu      sync.Mutex
	entries map[string]*memoEntry

	hits, misses atomic.Int64
}

type memoEntry struct {
	done  chan struct{}
	steps []Step // outputs with the worktree's directory replaced by worktreeMark
	ok    bool
}

// Exec runs argv in the workspace as Workspace.Exec does, reusing the result of the same
// command on an identical tree (cached true): the file tools' go vet after each edit. As for
// verifications, a timed-out result is not kept. A nil Memo runs the command.
func (m *Memo) Exec(ctx context.Context, ws *workspace.Workspace, argv ...string) (res workspace.Result, cached bool, err error) {
	if m == nil {
		res, err = ws.Exec(ctx, argv...)
		return res, false, err
	}
	key, err := treeKey(ws.Dir)
	if err != nil {
		return workspace.Result{}, false, err
	}
	key = fmt.Sprintf("exec %q %s", argv, key)
	steps, cached, err := m.do(ctx, key, ws.Dir, func() ([]Step, error) {
		r, err := ws.Exec(ctx, argv...)
		return []Step{{Command: strings.Join(argv, " "), ExitCode: r.ExitCode, TimedOut: r.TimedOut, Duration: r.Duration,
			Output: string(r.Output), Bytes: r.Bytes}}, err
	})
	if err != nil {
		return workspace.Result{}, false, err
	}
	s := steps[0]
	return workspace.Result{Output: []byte(s.Output), Bytes: s.Bytes, Truncated: s.Bytes > len(s.Output), ExitCode: s.ExitCode,
		TimedOut: s.TimedOut, Duration: s.Duration}, cached, nil
}

// do returns the steps remembered under key, waiting for a computation of the same key in
// flight, or runs them with run and remembers them (outputs made independent of dir).
func (m *Memo) do(ctx context.Context, key, dir string, run func() ([]Step, error)) ([]Step, bool, error) {
	m.mu.Lock()
	e, seen := m.entries[key]
	if !seen {
		e = &memoEntry{done: make(chan struct{})}
		m.entries[key] = e
	}
	m.mu.Unlock()
	if seen {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if e.ok {
			steps := make([]Step, len(e.steps))
			for i, s := range e.steps {
				s.Output = strings.ReplaceAll(s.Output, worktreeMark, dir)
				steps[i] = s
			}
			return steps, true, nil
		}
		steps, err := run() // the first computation of the key was not kept
		return steps, false, err
	}
	steps, err := run()
	keep := err == nil
	stored := make([]Step, len(steps))
	for i, s := range steps {
		keep = keep && !s.TimedOut
		s.Output = strings.ReplaceAll(s.Output, dir, worktreeMark)
		stored[i] = s
	}
	if keep {
		e.steps, e.ok = stored, true
	} else {
		m.mu.Lock()
		delete(m.entries, key) // the next request of the key runs again
		m.mu.Unlock()
	}
	close(e.done)
	return steps, false, err
}

// worktreeMark stands for the worktree's directory in a remembered output (a panic's stack
// frames name it), so that the output fits the next worktree of the same tree.
const worktreeMark = "\x00worktree\x00"

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{entries: map[string]*memoEntry{}} }

// Stats returns how many verifications (Run) were answered from the memo and how many ran.
func (m *Memo) Stats() (hits, misses int64) { return m.hits.Load(), m.misses.Load() }

// Run verifies the workspace as Run does, reusing the commands' results of an identical tree
// verified before (Report.Cached). A nil Memo verifies every time.
func (m *Memo) Run(ctx context.Context, ws *workspace.Workspace, opts distill.Options) (Report, error) {
	if m == nil || ws.Instance.Race {
		return Run(ctx, ws, opts)
	}
	t0 := time.Now()
	key, err := treeKey(ws.Dir)
	if err != nil {
		return Report{}, err
	}
	steps, cached, err := m.do(ctx, "verify "+strings.Join(ws.Instance.VerifyPackages(), " ")+" "+key, ws.Dir, func() ([]Step, error) { return execute(ctx, ws) })
	if err != nil {
		return Report{Steps: steps}, err
	}
	if cached {
		m.hits.Add(1)
	} else {
		m.misses.Add(1)
	}
	rep, err := assemble(ctx, ws, steps, opts, t0)
	rep.Cached = cached
	return rep, err
}

// treeKey is the SHA-256 of the tree's files under dir: each regular file's path, executable
// bit and content, each symbolic link's path and target; .git and directories left out.
func treeKey(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "link %q %q\n", rel, target)
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "file %q %o %d\n", rel, info.Mode().Perm()&0o111, info.Size())
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		default:
			fmt.Fprintf(h, "other %q %s\n", rel, t)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("verify: hash the tree: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
