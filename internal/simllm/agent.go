package simllm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dittolab/ditto/internal/tasks"
)

// agent is the ideal agent of a recognised task, with the means to look ahead: it can run the
// task's deterministic tools on the recognised instance to learn what the ideal agent would do
// after a step it has not taken yet (to jump over a step, or to plan a branching path).
type agent struct {
	ctx    context.Context
	task   *tasks.Task
	inst   *tasks.Instance
	prompt string
}

// step is one (state, tool, args) of the ideal path.
type step struct {
	State string
	Tool  string
	Args  json.RawMessage
	Desc  string // what the tool does, for free-text plans
}

// ideal asks the task's Ideal for the next action. A panic inside Ideal is a defect of the
// task; it is returned as an error so the server can answer 500 instead of dying.
func (a *agent) ideal(results []tasks.ToolResult) (tool string, args json.RawMessage, done bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("simllm: task %s: Ideal panicked: %v", a.task.Name, p)
		}
	}()
	tool, args, done = a.task.Ideal(a.prompt, results)
	return tool, args, done, nil
}

// advance returns results extended by the ideal call of tool with args as if it had been made,
// by running the tool on the recognised instance. It fails without an instance or when the
// tool fails.
func (a *agent) advance(results []tasks.ToolResult, tool string, args json.RawMessage) ([]tasks.ToolResult, bool) {
	if a.inst == nil {
		return nil, false
	}
	t, ok := a.task.ToolByName(tool)
	if !ok || t.Exec == nil {
		return nil, false
	}
	out, err := safeExec(a.ctx, t, a.inst, args)
	if err != nil {
		return nil, false
	}
	next := make([]tasks.ToolResult, len(results), len(results)+1)
	copy(next, results)
	return append(next, tasks.ToolResult{Tool: tool, Args: args, Output: out}), true
}

func safeExec(ctx context.Context, t *tasks.Tool, inst *tasks.Instance, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("simllm: tool %s panicked: %v", t.Name, p)
		}
	}()
	return t.Exec(ctx, inst, args)
}

// path is the ideal agent's remaining path from results: the calls it would make, looked ahead
// by running the tools. Without an instance it holds at most the next call.
func (a *agent) path(results []tasks.ToolResult) ([]step, error) {
	var out []step
	for range len(a.task.States) + 2 {
		tool, args, done, err := a.ideal(results)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		out = append(out, step{State: a.stateOf(tool), Tool: tool, Args: args})
		next, ok := a.advance(results, tool, args)
		if !ok {
			break
		}
		results = next
	}
	return out, nil
}

// planSteps is the whole ideal path from the start, as (state, tool) pairs. When the tools
// cannot be run (no instance recognised) the graph is walked from Start taking the first
// successor at each branch, as a model guessing the likely path would.
func (a *agent) planSteps() ([]step, error) {
	p, err := a.path(nil)
	if err != nil {
		return nil, err
	}
	if len(p) > 0 && p[len(p)-1].Tool == a.task.FinalTool {
		return p, nil
	}
	var walk []step
	s, ok := a.task.StateByName(a.task.Start)
	seen := map[string]bool{}
	for ok && !seen[s.Name] {
		seen[s.Name] = true
		walk = append(walk, step{State: s.Name, Tool: s.Tool})
		if s.Terminal() {
			break
		}
		s, ok = a.task.StateByName(s.Next[0])
	}
	// Keep what the look-ahead established and continue it with the walk.
	if len(p) > 0 && len(p) < len(walk) && p[len(p)-1].State == walk[len(p)-1].State {
		return append(p, walk[len(p):]...), nil
	}
	return walk, nil
}

func (a *agent) stateOf(tool string) string {
	if s, ok := a.task.StateOfTool(tool); ok {
		return s.Name
	}
	return ""
}

// argsFor finds the arguments the ideal agent would give tool: from its next action, from an
// earlier point of the conversation at which it would have called tool, or by looking ahead.
func (a *agent) argsFor(results []tasks.ToolResult, tool string) (json.RawMessage, bool) {
	for k := len(results); k >= 0; k-- {
		t, args, done, err := a.ideal(results[:k])
		if err == nil && !done && t == tool {
			return args, true
		}
	}
	p, err := a.path(results)
	if err != nil {
		return nil, false
	}
	for _, s := range p {
		if s.Tool == tool {
			return s.Args, true
		}
	}
	return nil, false
}

// walkedTools are the tools of the states the ideal agent walks through before its next
// state: their results are the prerequisites it has already seen.
func (a *agent) walkedTools(results []tasks.ToolResult) map[string]bool {
	out := map[string]bool{}
	s, ok := a.task.StateByName(a.task.Start)
	for range len(a.task.States) + 1 {
		if !ok {
			break
		}
		var last json.RawMessage
		for i := len(results) - 1; i >= 0; i-- {
			if results[i].Tool == s.Tool && results[i].Err == "" && results[i].Output != nil {
				last = results[i].Output
				break
			}
		}
		if last == nil || (s.Validate != nil && len(s.Validate(last)) > 0) || s.Terminal() {
			break
		}
		out[s.Tool] = true
		next, err := s.Successor(last)
		if err != nil {
			break
		}
		s, ok = a.task.StateByName(next)
	}
	return out
}
