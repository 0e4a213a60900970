package tasks

import (
	"fmt"
	"io/fs"
	"slices"
	"sync"
)

var registry = struct {
	once  sync.Once
	mu    sync.RWMutex
	tasks map[string]*Task
}{}

// load reads the built-in tasks from their embedded task files: the tasks of the state graph
// and the coding tasks (builtin/coding-*.yaml, each naming a shipped repository's instance).
func load() {
	registry.tasks = map[string]*Task{}
	for _, name := range []string{creditTask, renalTask, amlTask} {
		t, err := loadBuiltin(name)
		if err != nil {
			panic("tasks: built-in task " + name + ": " + err.Error()) // embedded: a build-time fact
		}
		registry.tasks[t.Name] = t
	}
	coding, err := fs.Glob(builtinFS, "builtin/coding-*.yaml")
	if err != nil {
		panic(err)
	}
	for _, p := range coding {
		t, err := loadCoding(p)
		if err != nil {
			panic("tasks: built-in coding task " + p + ": " + err.Error()) // embedded: a build-time fact
		}
		registry.tasks[t.Name] = t
	}
}

// loadCoding reads an embedded coding task file.
func loadCoding(path string) (*Task, error) {
	data, err := builtinFS.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseFile(path, data)
	if err != nil {
		return nil, err
	}
	return FromFile(f, nil)
}

// Get returns the registered task with the given name, or an error wrapping ErrUnknownTask.
// The returned Task is shared and must not be modified.
func Get(name string) (*Task, error) {
	registry.once.Do(load)
	registry.mu.RLock()
	t, ok := registry.tasks[name]
	registry.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v, and the coding tasks %v)", ErrUnknownTask, name, Names(), CodingNames())
	}
	return t, nil
}

// Names returns the names of the registered tasks of the state graph, sorted. Coding tasks
// (Task.Coding set) are listed by CodingNames; Get finds both.
func Names() []string { return names(false) }

// CodingNames returns the names of the registered coding tasks, sorted.
func CodingNames() []string { return names(true) }

func names(coding bool) []string {
	registry.once.Do(load)
	registry.mu.RLock()
	names := make([]string, 0, len(registry.tasks))
	for n, t := range registry.tasks {
		if (t.Coding != nil) == coding {
			names = append(names, n)
		}
	}
	registry.mu.RUnlock()
	slices.Sort(names)
	return names
}

// Register adds a task (for example a test task) after checking it with Task.Validate.
// Registering a name twice is an error. The task must not be modified afterwards.
func Register(t *Task) error {
	registry.once.Do(load)
	if err := t.Validate(); err != nil {
		return err
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.tasks[t.Name]; dup {
		return fmt.Errorf("tasks: task %q is already registered", t.Name)
	}
	registry.tasks[t.Name] = t
	return nil
}
