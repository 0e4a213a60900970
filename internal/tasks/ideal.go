package tasks

import "encoding/json"

// idealNext walks the task graph from Start over the tool results seen so far and returns the
// first state whose tool has no valid successful output yet, or done once the terminal state
// reached by the walk has one. A result counts for a state when it is the last successful call of
// the state's tool and passes the state's validator; the walk follows Route on that output, so a
// branching task takes the branch its data dictates.
func idealNext(t *Task, results []ToolResult) (*State, bool) {
	s, _ := t.StateByName(t.Start)
	for range len(t.States) + 1 { // a path visits each state at most once
		out, ok := lastOutput(results, s.Tool)
		if !ok || len(s.Validate(out)) > 0 {
			return s, false
		}
		if s.Terminal() {
			return nil, true
		}
		next, err := s.Successor(out)
		if err != nil {
			return s, false
		}
		s, _ = t.StateByName(next)
	}
	return nil, true
}

// idealFunc builds a Task.Ideal from a per-state argument builder.
func idealFunc(t *Task, args func(state, path string, results []ToolResult) map[string]any) func(string, []ToolResult) (string, json.RawMessage, bool) {
	return func(prompt string, results []ToolResult) (string, json.RawMessage, bool) {
		s, done := idealNext(t, results)
		if done {
			return "", nil, true
		}
		return s.Tool, mustJSON(args(s.Name, pathIn(t.Name, prompt), results)), false
	}
}
