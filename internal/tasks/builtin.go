package tasks

import (
	"context"
	"embed"
	"encoding/json"
	"strings"
	"sync"
)

// builtinFS holds the built-in tasks' task files, builtin/<task>.yaml.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinFile returns the task file of a built-in task, as embedded.
func BuiltinFile(name string) ([]byte, bool) {
	b, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	return b, err == nil
}

type execFunc = func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error)

// kit is what ditto knows of a built-in task beyond its file: the Go implementations of its
// tools, by tool name, and the arguments its ideal agent gives each state (see idealFunc).
type kit struct {
	tools map[string]execFunc
	ideal func(state, path string, results []ToolResult) map[string]any
}

// kits are the built-in tasks' kits by task name, each made once (its fixture store is read
// then).
var kits = map[string]func() kit{
	creditTask: sync.OnceValue(creditKit),
	renalTask:  sync.OnceValue(renalKit),
	amlTask:    sync.OnceValue(amlKit),
}

// builtinExec returns the implementation of a builtin tool named "<task>.<tool>".
func builtinExec(name string) (execFunc, bool) {
	task, tool, ok := strings.Cut(name, ".")
	mk, known := kits[task]
	if !ok || !known {
		return nil, false
	}
	exec, ok := mk().tools[tool]
	return exec, ok
}

func builtinKnown(name string) bool {
	task, tool, ok := strings.Cut(name, ".")
	mk, known := kits[task]
	if !ok || !known {
		return false
	}
	_, ok = mk().tools[tool]
	return ok
}

// loadBuiltin reads the embedded task file of a built-in task and gives it its ideal agent.
func loadBuiltin(name string) (*Task, error) {
	data, ok := BuiltinFile(name)
	if !ok {
		return nil, ErrUnknownTask
	}
	f, err := ParseFile("builtin/"+name+".yaml", data)
	if err != nil {
		return nil, err
	}
	t, err := FromFile(f, nil)
	if err != nil {
		return nil, err
	}
	t.Ideal = idealFunc(t, kits[name]().ideal)
	return t, nil
}
