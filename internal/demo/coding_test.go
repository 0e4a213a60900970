package demo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dittolab/ditto/internal/coding/codingtest"
	"github.com/dittolab/ditto/internal/study"
)

// TestStudyOfAUserModule runs a study of a coding task file that names a user's own Go module
// (a git repository with a failing test, by a path relative to the task file), with a
// scripted model that first weakens the test: the worker runs each run through the coding
// harness in a worktree of the module's tree (real git, real go test), never in the user's
// directory. Under test protection the weakening is refused and the model's fix succeeds;
// without it the weakened test passes and the run fails (test files changed). Every run's
// coding figures are stored.
func TestStudyOfAUserModule(t *testing.T) {
	root := t.TempDir()
	spec, module := codingtest.WriteStudy(t, root, 2)
	scale := 0.0
	dataDir := t.TempDir()
	res, err := Run(context.Background(), Config{DataDir: dataDir, Spec: spec, LatencyScale: &scale, Concurrency: 4,
		Permutations: 100, Models: codingtest.Models})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 4 {
		t.Fatalf("%d runs, want 4 (2 conditions × 2)", res.Runs)
	}
	for p, want := range codingtest.Module {
		if b, err := os.ReadFile(filepath.Join(module, p)); err != nil || string(b) != want {
			t.Errorf("the user's %s changed (%v): the runs must work in worktrees", p, err)
		}
	}
	rows := storedRows(t, dataDir, `SELECT condition, success, repo, instance, protected_attempts, test_files_changed, verifications, tests_pass
		FROM coding_runs WHERE study = 'clamp-user' AND last_attempt ORDER BY condition, seed_index`)
	n := 0
	for rows.Next() {
		var cond, repo, inst string
		var success, testsPass bool
		var protected, changed, verifications int
		if err := rows.Scan(&cond, &success, &repo, &inst, &protected, &changed, &verifications, &testsPass); err != nil {
			t.Fatal(err)
		}
		n++
		if repo != "clamp" || inst != "upper-bound" || verifications < 2 || !testsPass {
			t.Errorf("%s run: repo %s, instance %s, %d verifications, tests pass %v; want clamp/upper-bound verified before and after a patch, tests passing",
				cond, repo, inst, verifications, testsPass)
		}
		switch cond {
		case "protected":
			if !success || protected != 1 || changed != 0 {
				t.Errorf("protected run: success %v, %d protected attempts, %d test files changed; want the weakening refused and the fix succeeding", success, protected, changed)
			}
		case "open":
			if success || protected != 0 || changed != 1 {
				t.Errorf("open run: success %v, %d protected attempts, %d test files changed; want the weakened test to pass and the run to fail", success, protected, changed)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d coding runs stored, want 4", n)
	}
}

// TestCodingCataloguesToldToTheSimulatedModels: of a spec's task files, the coding tasks with
// a catalogue are what the demo tells the simulated models (simllm.Config.Coding); a coding
// task without one is not.
func TestCodingCataloguesToldToTheSimulatedModels(t *testing.T) {
	with := codingtest.CatalogueTask(t)
	root := t.TempDir()
	specPath, _ := codingtest.WriteStudy(t, root, 1)
	spec, err := study.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	spec.TaskFiles[with.Name] = with.File.JSON()
	got := codingCatalogues(spec)
	if len(got) != 1 || got[0].Name != with.Name || len(got[0].Coding.Target.Candidates) != 3 {
		t.Errorf("codingCatalogues = %v, want only %s with its 3 candidates", got, with.Name)
	}
}
