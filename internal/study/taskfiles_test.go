package study

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/taskfile"
)

// writeSpec writes a spec naming a task file by path (relative to the spec) beside a copy of
// the task file.
func writeSpec(t *testing.T, taskYAML string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tasks", "staging.yaml"), []byte(taskYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `{"name":"own","tasks":["credit_ecl","tasks/staging.yaml"],"models":["sim-steady"],"conditions":["baseline"],"runs":2,
 "endpoints":{"sim":{"sim":true,"models":["sim-steady"]}},"task_inputs":{"tasks/staging.yaml":[0,2]}}`
	path := filepath.Join(dir, "study.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func stagingYAML(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../simllm/testdata/ifrs9_staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTaskFileByPath: a spec names a task file by its path beside built-in names; the study
// carries the task itself (task_files, in study.defined and in every job), under its name.
func TestTaskFileByPath(t *testing.T) {
	s, err := Load(writeSpec(t, stagingYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	if s.Tasks[1] != "ifrs9_staging" || len(s.TaskFiles["ifrs9_staging"]) == 0 {
		t.Fatalf("tasks %v, task_files %v: want the path replaced by the file's name and its JSON kept", s.Tasks, len(s.TaskFiles))
	}
	if got := s.TaskInputs["ifrs9_staging"]; len(got) != 2 {
		t.Errorf("task_inputs = %v, want the path's entry under the task's name", s.TaskInputs)
	}
	p, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.Defined.Spec), `"task_files":{"ifrs9_staging":{`) {
		t.Error("study.defined's spec does not carry the task file")
	}
	var fileJobs int
	for _, j := range p.Jobs {
		b, err := j.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeJob(b)
		if err != nil {
			t.Fatalf("DecodeJob: %v", err)
		}
		switch back.Task {
		case "ifrs9_staging":
			fileJobs++
			task, err := back.TaskDef()
			if err != nil || task.Name != "ifrs9_staging" || len(task.Instances) != 3 {
				t.Errorf("the job's task: %v, %v", task, err)
			}
		case "credit_ecl":
			if len(back.TaskFile) != 0 {
				t.Error("a built-in task's job carries a task file")
			}
		}
	}
	if fileJobs != 2 {
		t.Errorf("%d jobs of the task file, want 2", fileJobs)
	}
	// A job whose task file names another task is refused.
	j := p.Jobs[len(p.Jobs)-1]
	j.Task = "credit_ecl"
	if _, err := j.Encode(); !errors.Is(err, ErrInvalidJob) {
		t.Errorf("job with a mismatched task file: %v, want ErrInvalidJob", err)
	}
}

// TestTaskFileProblems: a broken task file named by a spec is reported problem by problem,
// each with its path and line in the file.
func TestTaskFileProblems(t *testing.T) {
	broken := strings.Replace(stagingYAML(t), "next: [RECORD]", "next: [REKORD]", 1)
	broken = strings.Replace(broken, "stage: {type: integer, enum: [1, 2, 3]}", "stage: {type: integr}", 1)
	_, err := Load(writeSpec(t, broken))
	var te *taskfile.Error
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want the task file's problems", err)
	}
	for _, want := range []string{"states[1].next[0]", "tools[2].arguments"} {
		if !te.Has(want) {
			t.Errorf("no problem at %s in:\n%v", want, err)
		}
	}
	if !strings.Contains(err.Error(), "staging.yaml:") || !strings.Contains(err.Error(), "tasks[1]") {
		t.Errorf("err does not name the file, its lines and the spec's field:\n%v", err)
	}
}
