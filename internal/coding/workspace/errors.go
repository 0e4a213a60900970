package workspace

import "errors"

var (
	// ErrEscape is returned for a path or command that leads outside the worktree.
	ErrEscape = errors.New("workspace: outside the worktree")
	// ErrRootBusy is returned by Open when another process holds the root.
	ErrRootBusy = errors.New("workspace: root is in use by another process")
	// ErrDiscarded is returned for a workspace already discarded.
	ErrDiscarded = errors.New("workspace: discarded")
)
