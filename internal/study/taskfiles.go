package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// MaxTaskFileBytes bounds the canonical JSON of a task file a study carries: it travels in
// study.defined and in every job.
const MaxTaskFileBytes = 256 << 10

// ResolveTaskFiles reads the task files a spec names by path (a task named with a path
// separator or a .yaml, .yml or .json extension, in tasks, cells and task_inputs), relative to
// dir when not absolute. Each is checked (every problem reported with its path and line in the
// file), its canonical JSON stored in TaskFiles under the task's name, and the path replaced by
// that name, so that the spec, its study.defined and its jobs carry the task itself.
func (s *Spec) ResolveTaskFiles(dir string) error {
	var errs []error
	resolved := map[string]string{} // path → name
	resolve := func(field, name string) string {
		if !tasks.IsFileName(name) {
			return name
		}
		if n, ok := resolved[name]; ok {
			return n
		}
		path := name
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		f, err := tasks.LoadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			resolved[name] = name
			return name
		}
		if len(f.JSON()) > MaxTaskFileBytes {
			errs = append(errs, fmt.Errorf("%s: task file %s is %d bytes as canonical JSON, more than %d", field, name, len(f.JSON()), MaxTaskFileBytes))
		}
		if prev, dup := s.TaskFiles[f.Name]; dup && string(prev) != string(f.JSON()) {
			errs = append(errs, fmt.Errorf("%s: task file %s is named %q, as another task of the study is", field, name, f.Name))
		}
		if _, builtin := tasks.BuiltinFile(f.Name); builtin {
			errs = append(errs, fmt.Errorf("%s: task file %s is named %q, as a built-in task is: rename it", field, name, f.Name))
		}
		if s.TaskFiles == nil {
			s.TaskFiles = map[string]json.RawMessage{}
		}
		s.TaskFiles[f.Name] = f.JSON()
		resolved[name] = f.Name
		return f.Name
	}
	for i, t := range s.Tasks {
		s.Tasks[i] = resolve(fmt.Sprintf("tasks[%d]", i), t)
	}
	for i, c := range s.Cells {
		s.Cells[i].Task = resolve(fmt.Sprintf("cells[%d].task", i), c.Task)
	}
	for _, k := range sortedKeys(s.TaskInputs) {
		if n := resolve("task_inputs."+k, k); n != k {
			s.TaskInputs[n] = s.TaskInputs[k]
			delete(s.TaskInputs, k)
		}
	}
	return errors.Join(errs...)
}

// fileTasks caches the tasks read from task files' canonical JSON, by content.
var fileTasks sync.Map // string(canonical JSON) → fileTask

type fileTask struct {
	task *tasks.Task
	err  error
}

// TaskOfFile returns the task of a task file's canonical JSON (as a spec's task_files or a
// job's task_file hold it), with the tools of its servers unbound: enough to validate a study,
// not to run it (the worker binds them). Tasks are cached by content.
func TaskOfFile(data []byte) (*tasks.Task, error) {
	if v, ok := fileTasks.Load(string(data)); ok {
		ft := v.(fileTask)
		return ft.task, ft.err
	}
	var ft fileTask
	f, err := tasks.ParseFile("", data)
	if err == nil {
		ft.task, err = tasks.FromFile(f, nil)
	}
	ft.err = err
	fileTasks.Store(string(data), ft)
	return ft.task, ft.err
}

// task returns a task of the study: one of its task files, else a registered task.
func (s *Spec) task(name string) (*tasks.Task, error) {
	if data, ok := s.TaskFiles[name]; ok {
		return TaskOfFile(data)
	}
	return tasks.Get(name)
}

// validateTaskFiles checks the task files the spec carries: each parses, under its own name.
func (s *Spec) validateTaskFiles(ps *problems) {
	for _, name := range sortedKeys(s.TaskFiles) {
		f := "task_files." + name
		data := s.TaskFiles[name]
		if len(data) > MaxTaskFileBytes {
			ps.add(f, "%d bytes, more than %d", len(data), MaxTaskFileBytes)
			continue
		}
		t, err := TaskOfFile(data)
		var te *taskfile.Error
		switch {
		case errors.As(err, &te):
			for _, p := range te.Problems {
				ps.add(f+"."+p.Path, "%s", p.Msg)
			}
		case err != nil:
			ps.add(f, "%v", err)
		case t.Name != name:
			ps.add(f+".name", "the task file is named %q, not %q", t.Name, name)
		}
	}
}
