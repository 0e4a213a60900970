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

// worktreeMark stands for the worktree's directory in a remembered output (a panic's stack
// frames name it), so that the output fits the next worktree of the same tree.
const worktreeMark = "\x00worktree\x00"

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{entries: map[string]*memoEntry{}} }

// Stats returns how many verifications were answered from the memo and how many ran.
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
			return Report{}, ctx.Err()
		}
		if e.ok {
			m.hits.Add(1)
			steps := make([]Step, len(e.steps))
			for i, s := range e.steps {
				s.Output = strings.ReplaceAll(s.Output, worktreeMark, ws.Dir)
				steps[i] = s
			}
			rep, err := assemble(ctx, ws, steps, opts, t0)
			rep.Cached = true
			return rep, err
		}
		return Run(ctx, ws, opts) // the first verification of the tree was not kept
	}
	m.misses.Add(1)
	steps, err := execute(ctx, ws)
	keep := err == nil
	stored := make([]Step, len(steps))
	for i, s := range steps {
		keep = keep && !s.TimedOut
		s.Output = strings.ReplaceAll(s.Output, ws.Dir, worktreeMark)
		stored[i] = s
	}
	if keep {
		e.steps, e.ok = stored, true
	} else {
		m.mu.Lock()
		delete(m.entries, key) // the next verification of the tree runs the commands again
		m.mu.Unlock()
	}
	close(e.done)
	if err != nil {
		return Report{Steps: steps}, err
	}
	return assemble(ctx, ws, steps, opts, t0)
}

// treeKey is the SHA-256 of the tree's files under dir: each regular file's path, executable
// bit and content, each symbolic link's path and target; .git and directories left out.
func treeKey(dir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "verify %s\n", Packages)
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
