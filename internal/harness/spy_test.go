package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dittolab/ditto/internal/tasks"
)

// spy is a small linear task whose tools count their executions, to prove what never runs.
//
//	FIRST (first_tool) → SECOND (final_tool)
var spy = struct {
	once  sync.Once
	mu    sync.Mutex
	execs map[string]int
	task  *tasks.Task
}{execs: map[string]int{}}

const spyTask = "spy_task"

func spyExecs(tool string) int {
	spy.mu.Lock()
	defer spy.mu.Unlock()
	return spy.execs[tool]
}

func resetSpy() {
	spy.mu.Lock()
	defer spy.mu.Unlock()
	clear(spy.execs)
}

func registerSpy() {
	spy.once.Do(func() {
		exec := func(name string, fail bool) func(context.Context, *tasks.Instance, json.RawMessage) (json.RawMessage, error) {
			return func(_ context.Context, _ *tasks.Instance, args json.RawMessage) (json.RawMessage, error) {
				spy.mu.Lock()
				spy.execs[name]++
				spy.mu.Unlock()
				var a struct {
					Path  string `json:"path"`
					Fail  bool   `json:"fail"`
					Limit int    `json:"limit"`
				}
				if err := json.Unmarshal(args, &a); err != nil {
					return nil, err
				}
				if a.Fail || fail {
					return nil, errors.New("spy: scripted tool failure")
				}
				return json.RawMessage(`{"done":true,"limit":` + string(rune('0'+a.Limit%10)) + `,"tool":"` + name + `"}`), nil
			}
		}
		resources := func(args json.RawMessage) []string {
			var a struct {
				Path string `json:"path"`
			}
			if json.Unmarshal(args, &a) != nil {
				return []string{""}
			}
			return []string{a.Path}
		}
		schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"fail":{"type":"boolean"},"limit":{"type":"integer","minimum":0,"maximum":9}},"required":["path"],"additionalProperties":false}`)
		validate := func(out json.RawMessage) []string {
			var o struct{ Limit int }
			_ = json.Unmarshal(out, &o)
			if o.Limit > 0 {
				return []string{"limit must not be set"}
			}
			return nil
		}
		t := &tasks.Task{
			Name: spyTask, Title: "spy", Instructions: "Call first_tool then final_tool on data/spy/ok.",
			Start: "FIRST", FinalTool: "final_tool",
			States: []tasks.State{
				{Name: "FIRST", Tool: "first_tool", Next: []string{"SECOND"}, Validate: validate},
				{Name: "SECOND", Tool: "final_tool", Validate: validate},
			},
			Tools: []tasks.Tool{
				{Name: "first_tool", Description: "first", Schema: schema, Resources: resources, Exec: exec("first_tool", false)},
				{Name: "final_tool", Description: "final", Schema: schema, Resources: resources, Exec: exec("final_tool", false)},
			},
			Instances: []tasks.Instance{{ID: "ok", Prompt: "Process data/spy/ok.", Scope: []string{"data/spy/ok"}}},
			Check: func(_ *tasks.Instance, out json.RawMessage) bool {
				var o struct{ Tool string }
				return json.Unmarshal(out, &o) == nil && o.Tool == "final_tool"
			},
			Ideal: func(_ string, results []tasks.ToolResult) (string, json.RawMessage, bool) {
				n := 0
				for _, r := range results {
					if r.Output != nil {
						n++
					}
				}
				switch n {
				case 0:
					return "first_tool", json.RawMessage(`{"path":"data/spy/ok"}`), false
				case 1:
					return "final_tool", json.RawMessage(`{"path":"data/spy/ok"}`), false
				}
				return "", nil, true
			},
		}
		if err := tasks.Register(t); err != nil {
			panic(err)
		}
		spy.task = t
	})
}
