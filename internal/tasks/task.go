package tasks

import (
	"context"
	"encoding/json"
)

// Task is one agent task, expressed as data: a state graph with one authorized tool per state,
// deterministic tools over embedded fixture data, an output validator per state, and a
// ground-truth check of the final output. A Task is immutable after construction and safe for
// concurrent use.
type Task struct {
	Name         string // subject-safe identifier, e.g. "credit_ecl"
	Title        string
	Instructions string // the system prompt a model is given (never mentions a harness condition)
	Start        string // name of the first state
	States       []State
	Tools        []Tool
	Instances    []Instance // input instances; a study picks one by index
	// FinalTool names the tool whose successful output is the run's final output.
	FinalTool string
	// Check is the ground-truth check of a run's final output (canonical JSON) for an instance.
	Check func(inst *Instance, output json.RawMessage) bool
	// Ideal is what a perfect agent does next: given the instance prompt and the tool results
	// seen so far in the conversation, the next tool to call and its arguments, or done once
	// the final tool has returned. The simulated models use it to know how to do the task,
	// then deviate from it according to their persona; they never see the harness condition.
	Ideal func(prompt string, results []ToolResult) (tool string, args json.RawMessage, done bool)
}

// ToolResult is one tool call and its result as it appears in a conversation.
type ToolResult struct {
	Tool   string
	Args   json.RawMessage
	Output json.RawMessage // nil when the call failed
	Err    string
}

// State is one node of a task's graph.
type State struct {
	Name string
	Tool string   // the single tool authorized in this state
	Next []string // allowed successor states; empty means terminal
	// Route picks the successor from the state's tool output when Next has more than one
	// entry (data-dependent branching). Nil for linear states.
	Route func(output json.RawMessage) (string, error)
	// Validate checks the tool output of this state; it returns the problems found (none = valid).
	Validate func(output json.RawMessage) []string
}

// Tool is a deterministic tool implementation with a JSON Schema for its arguments.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema (draft 2020-12) of the arguments object
	// Resources lists the resources (e.g. dataset paths) a call with these arguments touches;
	// the permission gate compares them with Instance.Scope before anything executes.
	Resources func(args json.RawMessage) []string
	// Exec runs the tool. It must be deterministic in (instance, args) and must not retain args.
	Exec func(ctx context.Context, inst *Instance, args json.RawMessage) (json.RawMessage, error)
}

// Instance is one input instance of a task: its fixture data and allowed resource scope.
type Instance struct {
	ID     string          // e.g. "portfolio-a"
	Prompt string          // the user message that starts a run on this instance
	Scope  []string        // resource prefixes the run may touch
	Data   json.RawMessage // fixture data, embedded in the binary
}
