package warehouse

import "errors"

// Sentinel errors.
var (
	ErrConfig   = errors.New("warehouse: invalid config")
	ErrClosed   = errors.New("warehouse: closed")
	ErrReadOnly = errors.New("warehouse: opened read-only")
	// ErrCommit wraps a failure to store a batch in DuckDB: ingestion stops (nothing was acked).
	ErrCommit = errors.New("warehouse: commit failed")
	// ErrOldSchema is returned by Open for a database written by an older ditto whose tables
	// lack columns this build needs: rebuild it from the stream (Rebuild).
	ErrOldSchema = errors.New("warehouse: database schema is older than this build")
	// ErrExists is returned by Rebuild when the target database file already exists.
	ErrExists = errors.New("warehouse: database file already exists")
	// ErrHook is wrapped around an error returned by a test hook (Hooks): ingestion stops there.
	ErrHook = errors.New("warehouse: stopped by hook")
)
