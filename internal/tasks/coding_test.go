package tasks_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/coding/codingtest"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// TestShippedCodingTasksAreTaskFiles: every shipped repository instance has an embedded task
// file, and the task read from it is the task the registry built in Go before the files
// existed (name, title, instructions, one instance with the instance's prompt, repository,
// instance and class) working on the shipped instance's tree with the default verification and
// protection. Its canonical JSON reads back to the same task, as a study's worker reads it.
func TestShippedCodingTasksAreTaskFiles(t *testing.T) {
	rs, err := repos.All()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		for _, in := range r.Instances {
			n++
			name := tasks.CodingTaskName(r.Name, in.ID)
			data, ok := tasks.BuiltinFile(name)
			if !ok {
				t.Errorf("no embedded task file for %s", name)
				continue
			}
			f, err := tasks.ParseFile(name+".yaml", data)
			if err != nil {
				t.Fatalf("ParseFile(%s) = %v", name, err)
			}
			got, err := tasks.FromFile(f, nil)
			if err != nil {
				t.Fatalf("FromFile(%s) = %v", name, err)
			}
			// What the registry's Go code made of a shipped instance.
			want := &tasks.Task{Name: name, Title: fmt.Sprintf("%s: %s (%s)", r.Name, in.ID, in.Class), Instructions: tasks.CodingInstructions,
				Instances: []tasks.Instance{{ID: in.ID, Prompt: in.Prompt}}, Coding: &tasks.Coding{Repo: r.Name, Instance: in.ID, Class: in.Class}}
			if got.Name != want.Name || got.Title != want.Title || got.Instructions != want.Instructions ||
				!reflect.DeepEqual(got.Instances, want.Instances) || got.Coding.Repo != want.Coding.Repo ||
				got.Coding.Instance != want.Coding.Instance || got.Coding.Class != want.Coding.Class {
				t.Errorf("FromFile(%s) = %+v %+v, want %+v %+v", name, got, got.Coding, want, want.Coding)
			}
			tg := got.Coding.Target
			if !maps.Equal(tg.Files, in.Files) || tg.Race != in.Race || !reflect.DeepEqual(tg.Candidates, in.Candidates) ||
				tg.Locus != in.Locus || tg.Digest != in.Digest || tg.Digest == "" {
				t.Errorf("%s: the target is not the shipped instance's tree, catalogue and locus", name)
			}
			if !tg.Protects("x_test.go") || !tg.Protects("a/testdata/b") || tg.Protects("x.go") || strings.Join(tg.VerifyPackages(), " ") != "./..." {
				t.Errorf("%s: protection or packages are not the defaults", name)
			}
			reg, err := tasks.Get(name)
			if err != nil || reg.Coding.Target.Digest != tg.Digest || reg.Instances[0].Prompt != in.Prompt {
				t.Errorf("Get(%s) = %+v, %v; want the task of its file", name, reg, err)
			}
			again, err := tasks.ParseFile("", f.JSON())
			if err != nil {
				t.Fatalf("ParseFile(JSON of %s) = %v", name, err)
			}
			if tt, err := tasks.FromFile(again, nil); err != nil || tt.Coding.Target.Digest != tg.Digest || tt.Title != got.Title {
				t.Errorf("%s: the canonical JSON does not read back to the same task: %v", name, err)
			}
		}
	}
	if n < 8 || len(tasks.CodingNames()) != n {
		t.Errorf("%d shipped instances, CodingNames() has %d; want the same, at least 8", n, len(tasks.CodingNames()))
	}
}

// userTree makes, under a temporary root, the user's module in clamp (codingtest's module, a
// git repository, plus an ignored file that must not be read) and a directory tasks beside it
// for task files naming the module as ../clamp; it returns both.
func userTree(t *testing.T) (mod, tasksDir string) {
	t.Helper()
	root := t.TempDir()
	mod, tasksDir = filepath.Join(root, "clamp"), filepath.Join(root, "tasks")
	for _, d := range []string{mod, tasksDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	codingtest.WriteModule(t, mod, map[string]string{".gitignore": "*.log\n", "build.log": "ignored\n"})
	return mod, tasksDir
}

// userTaskFile is codingtest's task file with a catalogue: the fix and a test weakening.
const userTaskFile = codingtest.TaskFile + `  candidates:
    - id: add-upper
      kind: fix
      edits:
        - path: clamp.go
          old: "\treturn v\n}"
          new: "\tif v > hi {\n\t\treturn hi\n\t}\n\treturn v\n}"
    - id: drop-case
      kind: weaken_test
      edits:
        - path: clamp_test.go
          old: ", {11, 10}}"
          new: "}"
`

// TestLoadFileReadsTheUserTree: a task file naming a user's git repository by a path relative
// to the file gets the files git tracks and does not ignore, as they are in the work tree; the
// tree travels in the file's canonical JSON, which reads back (as a worker reads it) to the
// same task, whose catalogue's fix is located.
func TestLoadFileReadsTheUserTree(t *testing.T) {
	mod, tasksDir := userTree(t)
	// An untracked file git does not ignore is part of the tree, as the user sees it.
	if err := os.WriteFile(filepath.Join(mod, "doc.go"), []byte("// Package clamp clamps.\npackage clamp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tasksDir, "clamp.yaml")
	if err := os.WriteFile(path, []byte(userTaskFile), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := tasks.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := f.Coding.Repository.Files
	if got := strings.Join(slices.Sorted(maps.Keys(files)), " "); got != ".gitignore clamp.go clamp_test.go doc.go go.mod" {
		t.Errorf("tree read = %s, want the tracked and unignored files", got)
	}
	again, err := tasks.ParseFile("", f.JSON())
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.FromFile(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := task.Coding.Target
	if task.Coding.Repo != "clamp" || tg.ID != "upper-bound" || tg.Class != "wrong_boundary" || !maps.Equal(tg.Files, files) ||
		len(tg.Candidates) != 2 || tg.Locus != (repos.Locus{File: "clamp.go", Line: 8}) {
		t.Errorf("task %+v, target %s/%s %+v; want the clamp tree with its catalogue, the fix at clamp.go:8", task.Coding, tg.Repo, tg.ID, tg.Locus)
	}
	if task.Instructions != tasks.CodingInstructions || !strings.HasPrefix(task.Instances[0].Prompt, "Clamp(11, 0, 10) returns 11") {
		t.Errorf("instructions %q, prompt %q", task.Instructions, task.Instances[0].Prompt)
	}
	// Without its tree (parsed from the text, not loaded), the task cannot be made.
	bare, err := tasks.ParseFile("clamp.yaml", []byte(userTaskFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasks.FromFile(bare, nil); !errors.Is(err, taskfile.ErrInvalid) || !strings.Contains(err.Error(), "coding.repository.path") {
		t.Errorf("FromFile(file not loaded) = %v, want a problem at coding.repository.path", err)
	}
}

// TestCodingFileProblems: a coding task file that is wrong in one place is refused with the
// field at fault and its line, whether the schema, the checks of the section or the tree
// (read from disk) finds it.
func TestCodingFileProblems(t *testing.T) {
	_, tasksDir := userTree(t)
	tests := []struct {
		name     string
		old, new string
		wantPath string
		wantLine int
		wantMsg  string
	}{
		{"unknown field", "  class: wrong_boundary\n", "  klass: wrong_boundary\n", "coding", 3, `unknown field(s) "klass"`},
		{"no repository form", "    path: ../clamp\n", "    x-note: none\n", "coding.repository", 4, "needs shipped"},
		{"both forms", "    path: ../clamp\n", "    path: ../clamp\n    shipped: ledger\n", "coding.repository", 4, "not both"},
		{"unknown shipped repository", "    path: ../clamp\n", "    shipped: nosuch\n", "coding.repository.shipped", 5, `no shipped repository "nosuch"`},
		{"unknown shipped instance", "    path: ../clamp\n  instance: upper-bound\n", "    shipped: ledger\n  instance: nosuch\n", "coding.instance", 6, "has no instance"},
		{"no prompt", "  prompt: |\n    Clamp(11, 0, 10) returns 11: values above the upper bound are not clamped. Fix it;\n    do not change the tests.\n", "", "coding.prompt", 0, "required"},
		{"package outside", "  class: wrong_boundary\n", "  class: wrong_boundary\n  verify:\n    packages: [../other]\n", "coding.verify.packages[0]", 9, "relative to the module"},
		{"flag as package", "  class: wrong_boundary\n", "  class: wrong_boundary\n  verify:\n    packages: [-exec=sh]\n", "coding.verify.packages[0]", 9, "relative to the module"},
		{"bad pattern", "  class: wrong_boundary\n", "  class: wrong_boundary\n  protected: [\"[\"]\n", "coding.protected[0]", 8, "syntax error"},
		{"unknown kind", "      kind: weaken_test\n", "      kind: rewrite\n", "coding.candidates[1].kind", 19, "must be one of"},
		{"edit path escapes", "        - path: clamp.go\n", "        - path: ../clamp.go\n", "coding.candidates[0].edits[0].path", 15, "leaves the repository"},
		{"tools in a coding task", "version: 1\n", "version: 1\ntools: [{name: t, builtin: x}]\n", "tools", 2, "has no tools"},
		{"no such directory", "    path: ../clamp\n", "    path: ../nosuch\n", "coding.repository.path", 5, "no such file"},
		{"edit does not apply", "          old: \"\\treturn v\\n}\"\n", "          old: \"\\treturn w\\n}\"\n", "coding.candidates[0]", 12, "old text not found"},
		{"a weakening may edit code too", "          old: \", {11, 10}}\"\n          new: \"}\"\n", "          old: \", {11, 10}}\"\n          new: \"}\"\n        - path: clamp.go\n          old: \"[lo, hi]\"\n          new: \"[lo,hi]\"\n", "", 0, ""},
		{"fix edits a test", "    - id: add-upper\n      kind: fix\n      edits:\n", "    - id: add-upper\n      kind: fix\n      edits:\n        - path: clamp_test.go\n          old: \"package clamp\"\n          new: \"package clamp // x\"\n", "coding.candidates[0]", 12, "protected files exactly when"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(userTaskFile, tt.old) {
				t.Fatalf("the base file has no %q", tt.old)
			}
			path := filepath.Join(tasksDir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(userTaskFile, tt.old, tt.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := tasks.LoadFile(path)
			if tt.wantPath == "" {
				if err != nil {
					t.Fatalf("LoadFile = %v, want no problem", err)
				}
				return
			}
			var te *taskfile.Error
			if !errors.As(err, &te) || !errors.Is(err, taskfile.ErrInvalid) {
				t.Fatalf("LoadFile = %v, want a *taskfile.Error", err)
			}
			for _, p := range te.Problems {
				if p.Path == tt.wantPath && strings.Contains(p.Msg, tt.wantMsg) && (tt.wantLine == 0 || p.Line == tt.wantLine) {
					return
				}
			}
			t.Errorf("LoadFile = %v\nwant a problem at %s, line %d, saying %q", err, tt.wantPath, tt.wantLine, tt.wantMsg)
		})
	}
}
