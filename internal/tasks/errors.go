package tasks

import "errors"

var (
	// ErrUnknownTask is returned by Get for a name no task is registered under.
	ErrUnknownTask = errors.New("tasks: unknown task")
	// ErrNotFound is returned by a tool whose path names no dataset in the fixture store.
	ErrNotFound = errors.New("tasks: dataset not found")
	// ErrToolUnavailable is wrapped by a tool whose server was not reached or did not answer
	// (refused, reset, timed out): an infrastructure failure, not the agent's. The harness
	// then ends the run as errored, with the error as its cause, instead of handing the error
	// to the model as the tool's answer.
	ErrToolUnavailable = errors.New("tasks: tool server unavailable")
	// ErrBadArguments is returned by a tool whose arguments cannot be decoded or are out of range.
	ErrBadArguments = errors.New("tasks: bad arguments")
)

// ErrUnbound is returned by a tool of a server that was not bound to its transport (a task read
// to be validated, not run).
var ErrUnbound = errors.New("tasks: tool not bound to its server")
