package events

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Call is one executed tool call with its canonical arguments.
type Call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Run is the fold of one run attempt's events: Apply moves it forward one event at a time and
// refuses histories that are not well-formed. It holds the run as the analysis sees it
// (docs/metrics.md): plan, states, tools, calls, output, success, tokens, latency.
//
// Apply reads no clock, starts no goroutine and iterates no map, so replaying the same
// history always yields the same Run.
type Run struct {
	Study   string
	ID      string
	Attempt int

	Started  *RunStarted
	Finished *RunFinished
	LastSeq  int64

	Current string // the state entered and not yet exited ("" between states)
	// Plan is the canonical JSON of the accepted plan under Structured Planning, else the raw
	// text of the last proposed plan ("" if none).
	Plan      string
	States    []string
	Tools     []string
	Calls     []Call
	Output    json.RawMessage // from run.finished; nil when the run produced none
	Escalated bool

	PromptTokens      int64
	CompletionTokens  int64
	ModelCalls        int
	Retries           int
	PlanReprompts     int
	RejectedToolCalls int
	ValidationsFailed int

	// Coding is the fold of a coding run's workspace events (zero for other runs).
	Coding Coding
	// Context is the fold of a run's context-management and planning events (zero when the
	// run has none).
	Context ContextFold

	planAccepted bool
	pending      map[string]string // call id → tool, for calls not yet returned
	fsm          bool
}

// TransitionError details an illegal transition; it wraps ErrIllegalTransition.
type TransitionError struct {
	Seq  int64
	Type Type
	Msg  string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%v at seq %d (%s): %s", ErrIllegalTransition, e.Seq, e.Type, e.Msg)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// Apply folds one event into the run. The first event must be run.started with seq 1; each
// next event must carry the next sequence number; nothing may follow run.finished; state,
// tool and plan events must make sense in order. An event of a type this version does not know
// (an Unknown payload) is skipped when marked ignorable and refused with ErrUnknownType
// otherwise; so is a payload of a type the fold does not handle. On error the run is unchanged.
func (r *Run) Apply(e *Envelope) error {
	if r.Started == nil {
		if e.Type != TypeRunStarted {
			return fmt.Errorf("%w: first event is %s (seq %d)", ErrNotStarted, e.Type, e.Seq)
		}
		if e.Seq != 1 {
			return fmt.Errorf("%w: run.started has seq %d, want 1", ErrOutOfOrder, e.Seq)
		}
		p, ok := e.Payload.(RunStarted)
		if !ok {
			return &TransitionError{e.Seq, e.Type, "payload is not RunStarted"}
		}
		r.Study, r.ID, r.Attempt = e.Study, e.Run, e.Attempt
		r.Started, r.LastSeq = &p, 1
		r.fsm = slices.Contains(p.Components, ComponentFSM) && len(p.Graph) > 0
		return nil
	}
	if e.Study != r.Study || e.Run != r.ID || e.Attempt != r.Attempt {
		return fmt.Errorf("%w: %s/%s#%d in the fold of %s/%s#%d", ErrWrongRun, e.Study, e.Run, e.Attempt, r.Study, r.ID, r.Attempt)
	}
	switch {
	case e.Seq <= r.LastSeq:
		return fmt.Errorf("%w: seq %d after seq %d", ErrDuplicateSequence, e.Seq, r.LastSeq)
	case e.Seq > r.LastSeq+1:
		return fmt.Errorf("%w: seq %d after seq %d (missing %d)", ErrOutOfOrder, e.Seq, r.LastSeq, r.LastSeq+1)
	}
	if r.Finished != nil {
		return fmt.Errorf("%w: %s at seq %d", ErrAfterFinish, e.Type, e.Seq)
	}
	if err := r.apply(e); err != nil {
		return err
	}
	r.LastSeq = e.Seq
	return nil
}

func (r *Run) apply(e *Envelope) error {
	illegal := func(format string, args ...any) error {
		return &TransitionError{e.Seq, e.Type, fmt.Sprintf(format, args...)}
	}
	if err := r.checkContext(e.Payload); err != nil {
		return illegal("%v", err)
	}
	if err := r.applyPayload(e, illegal); err != nil {
		return err
	}
	r.foldContext(e.Payload)
	return nil
}

func (r *Run) applyPayload(e *Envelope, illegal func(format string, args ...any) error) error {
	switch p := e.Payload.(type) {
	case RunStarted:
		return illegal("run already started")
	case RunFinished:
		if len(r.pending) > 0 && p.Status != StatusAborted && p.Status != StatusEscalated {
			return illegal("finished with %d tool call(s) not returned", len(r.pending))
		}
		r.Finished = &p
		r.Output = p.Output
	case PlanProposed:
		if !r.planAccepted {
			r.Plan = p.Text
		}
	case PlanRejected:
		r.PlanReprompts++
	case PlanAccepted:
		if r.planAccepted {
			return illegal("a plan was already accepted")
		}
		if len(r.Tools) > 0 {
			return illegal("plan accepted after a tool ran")
		}
		c, err := canonicalPlan(p.Steps)
		if err != nil {
			return illegal("plan: %v", err)
		}
		r.Plan, r.planAccepted = string(c), true
	case StateEntered:
		if r.Current != "" {
			return illegal("entered %s while still in %s", p.State, r.Current)
		}
		if r.fsm {
			if err := r.checkEdge(p.State); err != nil {
				return illegal("%v", err)
			}
		}
		r.Current = p.State
		r.States = append(r.States, p.State)
	case StateExited:
		if r.Current != p.State {
			return illegal("exited %s but the current state is %q", p.State, r.Current)
		}
		r.Current = ""
	case ModelCalled:
		r.ModelCalls++
		r.PromptTokens += p.PromptTokens
		r.CompletionTokens += p.CompletionTokens
	case ToolCalled:
		if r.pending == nil {
			r.pending = map[string]string{}
		}
		if _, dup := r.pending[p.CallID]; dup {
			return illegal("call id %s is already pending", p.CallID)
		}
		r.pending[p.CallID] = p.Tool
		r.Tools = append(r.Tools, p.Tool)
		r.Calls = append(r.Calls, Call{Tool: p.Tool, Args: p.Args})
	case ToolRejected:
		r.RejectedToolCalls++
		if p.Reason == RejectTestProtected {
			r.Coding.ProtectedAttempts++
		}
	case ToolReturned:
		tool, ok := r.pending[p.CallID]
		if !ok {
			return illegal("tool.returned for call %s, which was not called or already returned", p.CallID)
		}
		if tool != p.Tool {
			return illegal("call %s was %s but returned as %s", p.CallID, tool, p.Tool)
		}
		delete(r.pending, p.CallID)
	case OutputInvalid:
		r.ValidationsFailed++
	case RetryScheduled:
		r.Retries++
	case RunEscalated:
		r.Escalated = true
	case OutputValidated:
	case WorkspaceCreated, WorkspaceDiscarded, VerificationRan, DiagnosticsDistilled, FileChanged:
		if err := r.applyCoding(p); err != nil {
			return illegal("%v", err)
		}
	case ContextConfigured, ContextPrepared, ContextElided, ContextRecalled, ContextSummarized, ContextOverflowed, PlanUpdated:
		// Checked by checkContext and folded by foldContext.
	case Unknown:
		// A newer producer's event: skipped when marked ignorable, as Decode would have.
		if !e.Ignorable {
			return fmt.Errorf("%w: %s at seq %d is not marked ignorable", ErrUnknownType, e.Type, e.Seq)
		}
	case StudyDefined, ReportPublished:
		return illegal("study-level event inside a run")
	default:
		// A payload this fold was not written for (a type added without its case here, or
		// one defined outside this package): refused rather than silently left out of the run.
		return fmt.Errorf("%w: the run fold does not know %T (%s at seq %d)", ErrUnknownType, p, e.Type, e.Seq)
	}
	return nil
}

// checkEdge checks a state entry against the graph of run.started.
func (r *Run) checkEdge(next string) error {
	g := r.Started.Graph
	if _, ok := g[next]; !ok {
		return fmt.Errorf("state %s is not in the task graph", next)
	}
	if len(r.States) == 0 {
		if r.Started.Start != "" && next != r.Started.Start {
			return fmt.Errorf("first state is %s, want %s", next, r.Started.Start)
		}
		return nil
	}
	prev := r.States[len(r.States)-1]
	if prev == next { // re-entering a state is a retry
		return nil
	}
	if !slices.Contains(g[prev], next) {
		return fmt.Errorf("no transition %s → %s", prev, next)
	}
	return nil
}

// Totals returns the run's totals as folded so far, in the form run.finished reports them.
// LatencyMS is left zero: the fold reads no clock, and the run's latency is the emitter's to
// measure.
func (r *Run) Totals() Totals {
	return Totals{
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, ModelCalls: r.ModelCalls,
		ToolCalls: len(r.Tools), Retries: r.Retries, PlanReprompts: r.PlanReprompts,
		RejectedToolCalls: r.RejectedToolCalls,
	}
}

// Done reports whether the run has finished.
func (r *Run) Done() bool { return r.Finished != nil }

// Fold applies a whole history in order and returns the run, or the first error with the
// index of the offending event.
func Fold(history []Envelope) (*Run, error) {
	r := &Run{}
	for i := range history {
		if err := r.Apply(&history[i]); err != nil {
			return r, fmt.Errorf("event %d: %w", i, err)
		}
	}
	return r, nil
}
