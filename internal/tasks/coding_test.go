package tasks

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/taskfile"
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
			name := CodingTaskName(r.Name, in.ID)
			data, ok := BuiltinFile(name)
			if !ok {
				t.Errorf("no embedded task file for %s", name)
				continue
			}
			f, err := ParseFile(name+".yaml", data)
			if err != nil {
				t.Fatalf("ParseFile(%s) = %v", name, err)
			}
			got, err := FromFile(f, nil)
			if err != nil {
				t.Fatalf("FromFile(%s) = %v", name, err)
			}
			// What the registry's Go code made of a shipped instance.
			want := &Task{Name: name, Title: fmt.Sprintf("%s: %s (%s)", r.Name, in.ID, in.Class), Instructions: CodingInstructions,
				Instances: []Instance{{ID: in.ID, Prompt: in.Prompt}}, Coding: &Coding{Repo: r.Name, Instance: in.ID, Class: in.Class}}
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
			reg, err := Get(name)
			if err != nil || reg.Coding.Target.Digest != tg.Digest || reg.Instances[0].Prompt != in.Prompt {
				t.Errorf("Get(%s) = %+v, %v; want the task of its file", name, reg, err)
			}
			again, err := ParseFile("", f.JSON())
			if err != nil {
				t.Fatalf("ParseFile(JSON of %s) = %v", name, err)
			}
			if tt, err := FromFile(again, nil); err != nil || tt.Coding.Target.Digest != tg.Digest || tt.Title != got.Title {
				t.Errorf("%s: the canonical JSON does not read back to the same task: %v", name, err)
			}
		}
	}
	if n < 8 || len(CodingNames()) != n {
		t.Errorf("%d shipped instances, CodingNames() has %d; want the same, at least 8", n, len(CodingNames()))
	}
}

// userModule writes a small Go module with a failing test (Clamp ignores its upper bound) as
// a git repository in dir, plus an ignored file that must not be read.
func userModule(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"go.mod":   "module example.com/clamp\n\ngo 1.22\n",
		"clamp.go": "package clamp\n\n// Clamp limits v to [lo, hi].\nfunc Clamp(v, lo, hi int) int {\n\tif v < lo {\n\t\treturn lo\n\t}\n\treturn v\n}\n",
		"clamp_test.go": "package clamp\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tfor _, c := range []struct{ v, want int }{{-1, 0}, {5, 5}, {11, 10}} {\n" +
			"\t\tif got := Clamp(c.v, 0, 10); got != c.want {\n\t\t\tt.Errorf(\"Clamp(%d, 0, 10) = %d, want %d\", c.v, got, c.want)\n\t\t}\n\t}\n}\n",
		".gitignore": "*.log\n",
		"build.log":  "ignored\n",
	}
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "clamp"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

const userTaskFile = `version: 1
name: clamp-upper
coding:
  repository:
    path: ../clamp
  instance: upper-bound
  class: wrong_boundary
  prompt: |
    Clamp(11, 0, 10) returns 11: values above the upper bound are not clamped. Fix it;
    do not change the tests.
  candidates:
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
	root := t.TempDir()
	mod, tasksDir := filepath.Join(root, "clamp"), filepath.Join(root, "tasks")
	for _, d := range []string{mod, tasksDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	userModule(t, mod)
	// An untracked file git does not ignore is part of the tree, as the user sees it.
	if err := os.WriteFile(filepath.Join(mod, "doc.go"), []byte("// Package clamp clamps.\npackage clamp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tasksDir, "clamp.yaml")
	if err := os.WriteFile(path, []byte(userTaskFile), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := f.Coding.Repository.Files
	if got := strings.Join(slices.Sorted(maps.Keys(files)), " "); got != ".gitignore clamp.go clamp_test.go doc.go go.mod" {
		t.Errorf("tree read = %s, want the tracked and unignored files", got)
	}
	again, err := ParseFile("", f.JSON())
	if err != nil {
		t.Fatal(err)
	}
	task, err := FromFile(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := task.Coding.Target
	if task.Coding.Repo != "clamp" || tg.ID != "upper-bound" || tg.Class != "wrong_boundary" || !maps.Equal(tg.Files, files) ||
		len(tg.Candidates) != 2 || tg.Locus != (repos.Locus{File: "clamp.go", Line: 8}) {
		t.Errorf("task %+v, target %s/%s %+v; want the clamp tree with its catalogue, the fix at clamp.go:8", task.Coding, tg.Repo, tg.ID, tg.Locus)
	}
	if task.Instructions != CodingInstructions || !strings.HasPrefix(task.Instances[0].Prompt, "Clamp(11, 0, 10) returns 11") {
		t.Errorf("instructions %q, prompt %q", task.Instructions, task.Instances[0].Prompt)
	}
	// Without its tree (parsed from the text, not loaded), the task cannot be made.
	bare, err := ParseFile("clamp.yaml", []byte(userTaskFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromFile(bare, nil); !errors.Is(err, taskfile.ErrInvalid) || !strings.Contains(err.Error(), "coding.repository.path") {
		t.Errorf("FromFile(file not loaded) = %v, want a problem at coding.repository.path", err)
	}
}

// TestCodingFileProblems: a coding task file that is wrong in one place is refused with the
// field at fault and its line, whether the schema, the checks of the section or the tree
// (read from disk) finds it.
func TestCodingFileProblems(t *testing.T) {
	root := t.TempDir()
	mod, tasksDir := filepath.Join(root, "clamp"), filepath.Join(root, "tasks")
	for _, d := range []string{mod, tasksDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	userModule(t, mod)
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
			_, err := LoadFile(path)
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
