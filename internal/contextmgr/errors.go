package contextmgr

import (
	"errors"
	"fmt"
)

var (
	// ErrDuplicateID is returned by History.Add for an empty id or one already used.
	ErrDuplicateID = errors.New("contextmgr: entry id empty or already in the history")
	// ErrOrphanToolMessage is returned by History.Add for a tool message answering no call of
	// the last assistant message.
	ErrOrphanToolMessage = errors.New("contextmgr: tool message answers no pending call")
	// ErrOverflow is wrapped by *OverflowError.
	ErrOverflow = errors.New("contextmgr: context window exceeded")
	// ErrNotStored is returned by Store.Recall for an id that was never elided with recall on.
	ErrNotStored = errors.New("contextmgr: no stored observation with this id")
	// ErrConfig is wrapped by Config.Validate's errors.
	ErrConfig = errors.New("contextmgr: invalid configuration")
	// ErrPlan is wrapped by ParsePlan's errors.
	ErrPlan = errors.New("contextmgr: invalid plan")
)

// OverflowError says a request would not fit the context window: Needed tokens against a
// Budget, under the tier that could not (or, T0, would not) make room.
type OverflowError struct {
	Tier   Tier
	Needed int
	Budget int
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("contextmgr: %s: request needs %d tokens, context window is %d", e.Tier, e.Needed, e.Budget)
}

func (e *OverflowError) Unwrap() error { return ErrOverflow }
