package tasks

import (
	"fmt"
	"slices"
	"sync"
)

var registry = struct {
	once  sync.Once
	tasks map[string]*Task
}{}

func load() {
	registry.tasks = map[string]*Task{}
	for _, build := range []func() *Task{newCreditECL, newRenalDosing, newAMLScreening} {
		t := build()
		if _, dup := registry.tasks[t.Name]; dup {
			panic("tasks: duplicate task " + t.Name) // programming error in this package
		}
		registry.tasks[t.Name] = t
	}
}

// Get returns the registered task with the given name, or an error wrapping ErrUnknownTask.
// The returned Task is shared and must not be modified.
func Get(name string) (*Task, error) {
	registry.once.Do(load)
	t, ok := registry.tasks[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownTask, name, Names())
	}
	return t, nil
}

// Names returns the names of the registered tasks, sorted.
func Names() []string {
	registry.once.Do(load)
	names := make([]string, 0, len(registry.tasks))
	for n := range registry.tasks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
