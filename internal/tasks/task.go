package tasks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dittolab/ditto/internal/taskfile"
)

// Task is one agent task: a state graph with one authorized tool per state, the tools, an output
// validator per state, and a ground-truth check of the final output. Tasks are read from task
// files (FromFile; the built-in tasks are embedded task files) or built in Go (tests). A Task is
// immutable after construction and safe for concurrent use.
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
	// the final tool has returned. The simulated models use it, for the tasks they know (the
	// built-in ones), to know how to do the task, then deviate from it according to their
	// persona; they never see the harness condition. Nil for a task nobody taught them (any
	// other task file): they then act on what the request tells them.
	Ideal func(prompt string, results []ToolResult) (tool string, args json.RawMessage, done bool)
	// File is the task file the task was read from (its canonical JSON is what a study sends
	// to its workers); nil for a task built in Go.
	File *taskfile.Task
	// Coding is set for a coding task (see Coding); nil for a task of the state graph.
	Coding *Coding
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

// Tool is a tool with a JSON Schema for its arguments, wherever it is served.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema (draft 2020-12) of the arguments object
	// Resources lists the resources (e.g. dataset paths) a call with these arguments touches;
	// the permission gate compares them with Instance.Scope before anything executes.
	Resources func(args json.RawMessage) []string
	// Scope is the permission scope a call needs ("read", "write", ...; "" for none); the
	// permission gate refuses a call whose scope the instance does not grant.
	Scope string
	// Idempotent says a second call with the same arguments does what the first did.
	Idempotent bool
	// Timeout bounds one call (0: none, for tools that run in process) and Retries is how many
	// times a call that failed with ErrToolUnavailable is made again, with the same
	// idempotency key (see IdempotencyKey).
	Timeout time.Duration
	Retries int
	// Origin says who answers the tool's calls (nil: ditto itself, in process).
	Origin func() Origin
	// Exec runs the tool. It must not retain args. A tool whose server was not reached or did
	// not answer returns an error wrapping ErrToolUnavailable.
	Exec func(ctx context.Context, inst *Instance, args json.RawMessage) (json.RawMessage, error)
}

// Origin names the server that answered a tool call, as the server reported itself: for an MCP
// server its implementation name and version from the initialization handshake.
type Origin struct {
	Server    string // the server's key in the task file
	Name      string // the implementation's name, as the server reports it
	Version   string
	Transport string // "stdio", "streamable_http", "http" or "fixtures"
}

// Instance is one input instance of a task.
type Instance struct {
	ID     string   // e.g. "portfolio-a"
	Prompt string   // the user message that starts a run on this instance
	Scope  []string // resource prefixes the run may touch
	// Grants are the permission scopes the run has; nil grants every scope.
	Grants []string
	Input  json.RawMessage // the instance's input as data, canonical JSON; nil when none
	Ideal  json.RawMessage // the correct final output, when known
}

// Granted reports whether the instance grants a permission scope ("" is always granted).
func (inst *Instance) Granted(scope string) bool {
	if scope == "" || inst.Grants == nil {
		return true
	}
	for _, g := range inst.Grants {
		if g == scope {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// WithIdempotencyKey returns ctx carrying the idempotency key of a tool call: the same for every
// attempt of one call, different for every call, so that a server can recognise a retry.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, ctxKey{}, key)
}

// IdempotencyKey returns the idempotency key ctx carries, or "".
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(ctxKey{}).(string)
	return k
}
