package worker

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/tasks"
	"github.com/dittolab/ditto/internal/toolserver"
)

// fileTasks are the tasks of the task files the worker's jobs carry, their tools bound to their
// servers: one binding per task file (by content) for the worker's life, shared by its runs, so
// that an MCP server is started or reached once per worker, not per run.
type fileTasks struct {
	pool *toolserver.Pool

	mu    sync.Mutex
	tasks map[string]*fileTask // by the file's canonical JSON
}

type fileTask struct {
	once sync.Once
	task *tasks.Task
}

// taskOf returns the task of a job that carries a task file, its tools bound. When a tool
// server cannot be bound (not reached, or not serving what the file declares), the task is the
// file's with every server tool failing as unavailable (tasks.ErrToolUnavailable) with that
// cause: the runs then end errored, with the cause, rather than failed.
func (ft *fileTasks) taskOf(job *study.Job) (*tasks.Task, error) {
	key := string(job.TaskFile)
	ft.mu.Lock()
	e, ok := ft.tasks[key]
	if !ok {
		e = &fileTask{}
		ft.tasks[key] = e
	}
	ft.mu.Unlock()
	e.once.Do(func() { e.task = ft.bind(job.TaskFile) })
	if e.task == nil {
		return nil, fmt.Errorf("%w: task_file does not read", study.ErrInvalidJob)
	}
	return e.task, nil
}

func (ft *fileTasks) bind(data json.RawMessage) *tasks.Task {
	f, err := tasks.ParseFile("task_file", data)
	if err != nil {
		return nil // DecodeJob read it: unreachable unless the build changed
	}
	t, err := tasks.FromFile(f, ft.pool)
	if err == nil {
		return t
	}
	unbound, uerr := tasks.FromFile(f, nil)
	if uerr != nil {
		return nil
	}
	return unbound.WithServersDown(err)
}

func (ft *fileTasks) close() error { return ft.pool.Close() }
