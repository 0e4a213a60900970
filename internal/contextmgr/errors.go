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

// Why a request overflowed (OverflowError.Reason).
const (
	// ReasonUnmanaged: the tier (T0) does not manage the context; the history outgrew it.
	ReasonUnmanaged = "unmanaged"
	// ReasonPreamble: the preamble (system prompt and task), the tools offered, the appended
	// plan and the completion reserved, with the last step cut as far as it can be, are alone
	// over the budget: no management could make the request fit.
	ReasonPreamble = "preamble"
	// ReasonTier: the request could have fitted and the managed tier did not make it (a defect
	// of the manager; the tests show it does not happen on the recorded runs).
	ReasonTier = "tier"
)

// OverflowError says a request would not fit the context window: Needed tokens against a
// Budget, under the tier that could not (or, T0, would not) make room, and why (Reason). Floor
// is, under a managed tier, what the request costs with everything it may drop or cut gone.
type OverflowError struct {
	Tier   Tier
	Needed int
	Budget int
	Reason string
	Floor  int
}

func (e *OverflowError) Error() string {
	switch e.Reason {
	case ReasonPreamble:
		return fmt.Sprintf("contextmgr: %s: request needs %d tokens, context window is %d: the preamble, tools, completion and last step alone need %d", e.Tier, e.Needed, e.Budget, e.Floor)
	case ReasonTier:
		return fmt.Sprintf("contextmgr: %s: request needs %d tokens, context window is %d, though %d could fit", e.Tier, e.Needed, e.Budget, e.Floor)
	}
	return fmt.Sprintf("contextmgr: %s: request needs %d tokens, context window is %d", e.Tier, e.Needed, e.Budget)
}

func (e *OverflowError) Unwrap() error { return ErrOverflow }
