package repos

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknown is returned for a repository or instance that is not shipped.
	ErrUnknown = errors.New("repos: unknown")
	// ErrPath is returned for a path that is not a clean relative path inside the tree.
	ErrPath = errors.New("repos: bad path")
	// ErrNoFile is returned by ApplyEdits for an edit of a file that does not exist.
	ErrNoFile = errors.New("no such file")
	// ErrEmptyOld, ErrOldNotFound and ErrOldNotUnique are Replace's refusals.
	ErrEmptyOld     = errors.New("old text is empty")
	ErrOldNotFound  = errors.New("old text not found")
	ErrOldNotUnique = errors.New("old text is not unique")
)

// CandidateError is a candidate patch of a catalogue that does not fit its tree.
type CandidateError struct {
	Index int // in the catalogue
	ID    string
	Err   error
}

func (e *CandidateError) Error() string {
	return fmt.Sprintf("candidates[%d] (%s): %v", e.Index, e.ID, e.Err)
}

func (e *CandidateError) Unwrap() error { return e.Err }
