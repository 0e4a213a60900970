package tasks

import "errors"

var (
	// ErrUnknownTask is returned by Get for a name no task is registered under.
	ErrUnknownTask = errors.New("tasks: unknown task")
	// ErrNotFound is returned by a tool whose path names no dataset in the fixture store.
	ErrNotFound = errors.New("tasks: dataset not found")
	// ErrBadArguments is returned by a tool whose arguments cannot be decoded or are out of range.
	ErrBadArguments = errors.New("tasks: bad arguments")
)
