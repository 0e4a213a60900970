package verify_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/coding/distill"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/coding/verify"
	"github.com/dittolab/ditto/internal/coding/workspace"
)

// TestCatalogue checks every shipped instance with real go build/vet/test in real worktrees:
// the defective tree fails with a diagnostic, every fix passes, every near miss and symptom
// patch fails, and every test weakening leaves a changed test file (so it is never a success).
func TestCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test about 40 times")
	}
	ctx := context.Background()
	m, err := workspace.Open(ctx, workspace.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rs, err := repos.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for _, in := range r.Instances {
			t.Run(r.Name+"/"+in.ID, func(t *testing.T) {
				ws, err := m.Create(ctx, r.Name+"-"+in.ID, in)
				if err != nil {
					t.Fatal(err)
				}
				defer ws.Discard(ctx)
				rep, err := verify.Run(ctx, ws, distill.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Success() || len(rep.Diagnostics) == 0 {
					t.Fatalf("defective tree: success %v, diagnostics %v\n%s", rep.Success(), rep.Diagnostics, rep.Raw())
				}
				for _, c := range in.Candidates {
					files := maps.Clone(in.Files)
					if err := repos.ApplyEdits(files, c.Edits); err != nil {
						t.Fatal(err)
					}
					for _, e := range c.Edits {
						if err := os.WriteFile(filepath.Join(ws.Dir, e.Path), []byte(files[e.Path]), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					rep, err := verify.Run(ctx, ws, distill.Options{})
					if err != nil {
						t.Fatal(err)
					}
					switch c.Kind {
					case repos.KindFix:
						if !rep.Success() {
							t.Errorf("fix %s fails:\n%s", c.ID, rep.Raw())
						}
					case repos.KindWeakenTest:
						if rep.Success() || len(rep.TestFilesChanged) == 0 {
							t.Errorf("test weakening %s: success %v, test files changed %v", c.ID, rep.Success(), rep.TestFilesChanged)
						}
					default:
						if rep.TestsPass {
							t.Errorf("%s %s passes the tests:\n%s", c.Kind, c.ID, rep.Raw())
						}
					}
					var paths []string
					for _, e := range c.Edits {
						paths = append(paths, e.Path)
					}
					if err := ws.Revert(ctx, paths...); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestMemo verifies the nil-map instance (its tests panic, so the raw output names the
// worktree's directory in stack frames) in two worktrees through one Memo: the second
// verification of the same tree is cached and reads exactly as a fresh one would — same
// commands, outputs rewritten for its own directory, same diagnostics — while a changed tree
// runs the commands again, and which test files changed is read from each worktree.
func TestMemo(t *testing.T) {
	ctx := context.Background()
	m, err := workspace.Open(ctx, workspace.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in, err := repos.Get("inventory", "nil-map")
	if err != nil {
		t.Fatal(err)
	}
	memo := verify.NewMemo()
	var wss []*workspace.Workspace
	for _, name := range []string{"a", "b"} {
		ws, err := m.Create(ctx, name, in)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Discard(ctx)
		wss = append(wss, ws)
	}
	first, err := memo.Run(ctx, wss[0], distill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := memo.Run(ctx, wss[1], distill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := verify.Run(ctx, wss[1], distill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || !second.Cached || fresh.Cached {
		t.Fatalf("cached: first %v, second %v, fresh %v; want false, true, false", first.Cached, second.Cached, fresh.Cached)
	}
	if !strings.Contains(first.Raw(), wss[0].Dir+"/") || !strings.Contains(second.Raw(), wss[1].Dir+"/") || strings.Contains(second.Raw(), wss[0].Dir) {
		t.Errorf("the cached output does not name its own worktree:\n%s", second.Raw())
	}
	if got, want := second.Distilled(), fresh.Distilled(); got != want || !slices.Equal(second.Diagnostics, fresh.Diagnostics) {
		t.Errorf("cached diagnostics differ from a fresh verification's:\ncached:\n%s\nfresh:\n%s", got, want)
	}
	if i := slices.IndexFunc(second.Diagnostics, func(d distill.Diagnostic) bool { return d.Kind == distill.KindPanic }); i < 0 || second.Diagnostics[i].File != "stock.go" {
		t.Errorf("cached diagnostics %v: want the panic placed in stock.go", second.Diagnostics)
	}
	// A test file weakened in b: a new tree, verified for real; the same tree in a is then
	// cached, and still reported as a changed test file of a.
	weaken := in.Candidates[slices.IndexFunc(in.Candidates, func(c repos.Candidate) bool { return c.Kind == repos.KindWeakenTest })]
	files := maps.Clone(in.Files)
	if err := repos.ApplyEdits(files, weaken.Edits); err != nil {
		t.Fatal(err)
	}
	for _, ws := range wss {
		for _, e := range weaken.Edits {
			if err := os.WriteFile(filepath.Join(ws.Dir, e.Path), []byte(files[e.Path]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, ws := range []*workspace.Workspace{wss[1], wss[0]} {
		rep, err := memo.Run(ctx, ws, distill.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Cached != (i == 1) || !rep.TestsPass || len(rep.TestFilesChanged) != 1 || rep.Success() {
			t.Errorf("weakened tree in %s: cached %v, tests pass %v, test files changed %v; want cached %v, passing, one test file changed",
				ws.Name, rep.Cached, rep.TestsPass, rep.TestFilesChanged, i == 1)
		}
	}
	if hits, misses := memo.Stats(); hits != 2 || misses != 2 {
		t.Errorf("memo stats: %d hits, %d misses; want 2 and 2", hits, misses)
	}
	// The file tools' go vet after an edit: the same command on the same tree runs once.
	var outs []string
	for i, ws := range wss {
		res, cached, err := memo.Exec(ctx, ws, "go", "vet", "./...")
		if err != nil {
			t.Fatal(err)
		}
		if cached != (i == 1) {
			t.Errorf("go vet in %s: cached %v, want %v", ws.Name, cached, i == 1)
		}
		outs = append(outs, strings.ReplaceAll(string(res.Output), ws.Dir, "DIR"))
	}
	if outs[0] != outs[1] {
		t.Errorf("cached go vet output %q differs from the first %q", outs[1], outs[0])
	}
}
