package verify_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
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
