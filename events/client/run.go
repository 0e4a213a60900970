package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
)

// RunSpec names a run and its cell.
type RunSpec struct {
	Study     string // required; the server's token must be bound to it
	Run       string // run id; "" generates a unique one (events.NewID)
	Attempt   int    // default 1
	Task      string // required: the agent or task name
	Model     string // required
	Condition string // default "production"; a release or configuration label
	Instance  string // optional input instance id (runs on the same input pair up)
	Seed      *int64 // optional sampling seed
	// InputKey names the input the run processes (an invoice id, a ticket number): runs of the
	// same key, task, model and release form an input group, and ditto measures determinism
	// within groups only. Empty: the key is derived from Input when it is given.
	InputKey string
	// Input is the run's input (marshalled with encoding/json and stored canonical): optional,
	// and the source of the input key when InputKey is empty. Large inputs are better named by
	// InputKey alone.
	Input any
}

// Run records one run. Its methods are safe for concurrent use (an agent may call tools in
// parallel). Recording methods only buffer; Flush and Finish send.
type Run struct {
	c *Client

	mu      sync.Mutex
	study   string
	id      string
	attempt int
	seq     int64
	start   time.Time
	fold    events.Run // the run so far: every recorded event is applied first
	buf     []events.Envelope
	callSeq int
	plans   int
}

// StartRun records run.started.
func (c *Client) StartRun(spec RunSpec) (*Run, error) {
	if spec.Task == "" || spec.Model == "" {
		return nil, fmt.Errorf("client: run spec needs a task and a model")
	}
	if spec.Attempt == 0 {
		spec.Attempt = 1
	}
	if spec.Condition == "" {
		spec.Condition = "production"
	}
	now := c.now()
	if spec.Run == "" {
		spec.Run = events.NewID(now)
	}
	var input json.RawMessage
	if spec.Input != nil {
		var err error
		if input, err = events.CanonicalValue(spec.Input); err != nil {
			return nil, fmt.Errorf("client: run spec input: %w", err)
		}
	}
	r := &Run{c: c, study: spec.Study, id: spec.Run, attempt: spec.Attempt, start: now}
	err := r.record(events.RunStarted{
		Task: spec.Task, Model: spec.Model, Condition: spec.Condition, Instance: spec.Instance,
		Seed: spec.Seed, Components: []string{}, Endpoint: "production", InputKey: spec.InputKey, Input: input,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ID returns the run id.
func (r *Run) ID() string { return r.id }

// record builds the next event, checks it against the schema and the run so far, and buffers
// it. On error nothing changes.
func (r *Run) record(p events.Payload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordLocked(p)
}

func (r *Run) recordLocked(p events.Payload) error {
	if r.fold.Done() {
		return ErrFinished
	}
	t := r.c.now()
	e := events.New(r.study, r.id, t, p)
	e.Attempt = r.attempt
	e.Seq = r.seq + 1
	e.Source = events.Source{Kind: events.SourceProduction, ID: r.c.source}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("client: %s: %w", e.Type, err)
	}
	if err := r.fold.Apply(&e); err != nil {
		return fmt.Errorf("client: %s: %w", e.Type, err)
	}
	r.seq++
	r.buf = append(r.buf, e)
	return nil
}

// Plan records a plan the model proposed (plan.proposed), as text. Successive plans of a run
// are attempts 1, 2, ...
func (r *Run) Plan(text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(events.PlanProposed{Text: text, Attempt: r.plans + 1}); err != nil {
		return err
	}
	r.plans++
	return nil
}

// EnterState records entering a state (a step of the agent).
func (r *Run) EnterState(state string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := ""
	if n := len(r.fold.States); n > 0 {
		from = r.fold.States[n-1]
	}
	return r.recordLocked(events.StateEntered{State: state, From: from})
}

// ExitState records leaving the current state with an outcome ("ok", "error", ...).
func (r *Run) ExitState(outcome string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fold.Current == "" {
		return fmt.Errorf("client: ExitState(%q) with no state entered: %w", outcome, events.ErrIllegalTransition)
	}
	return r.recordLocked(events.StateExited{State: r.fold.Current, Outcome: outcome})
}

// ModelCalled records one call to the model. Tokens and latency are summed into the run's
// totals.
func (r *Run) ModelCalled(m events.ModelCalled) error { return r.record(m) }

// ToolCall is a tool call in progress: call Return or Fail once.
type ToolCall struct {
	r       *Run
	id      string
	tool    string
	started time.Time
}

// CallTool records a tool call about to execute. args is any JSON-marshalable value (or a
// json.RawMessage), stored as canonical JSON.
func (r *Run) CallTool(tool string, args any) (*ToolCall, error) {
	canon, err := canonical(args)
	if err != nil {
		return nil, fmt.Errorf("client: tool %s arguments: %w", tool, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.callSeq++
	id := fmt.Sprintf("call-%d", r.callSeq)
	if err := r.recordLocked(events.ToolCalled{CallID: id, Tool: tool, Args: canon, State: r.fold.Current}); err != nil {
		return nil, err
	}
	return &ToolCall{r: r, id: id, tool: tool, started: r.c.now()}, nil
}

// Return records the tool's result (any JSON-marshalable value; nil is JSON null).
func (tc *ToolCall) Return(output any) error {
	canon, err := canonical(output)
	if err != nil {
		return fmt.Errorf("client: tool %s output: %w", tc.tool, err)
	}
	return tc.r.record(events.ToolReturned{CallID: tc.id, Tool: tc.tool, OK: true, Output: canon, DurationMS: tc.elapsed()})
}

// Fail records that the tool failed with err.
func (tc *ToolCall) Fail(err error) error {
	msg := "error"
	if err != nil && err.Error() != "" {
		msg = err.Error()
	}
	return tc.r.record(events.ToolReturned{CallID: tc.id, Tool: tc.tool, OK: false, Error: msg, DurationMS: tc.elapsed()})
}

func (tc *ToolCall) elapsed() float64 {
	return float64(tc.r.c.now().Sub(tc.started).Microseconds()) / 1000
}

// Result is how a run ended.
type Result struct {
	Output any    // the run's final output, stored as canonical JSON; nil for none
	Err    error  // non-nil: the run failed with this error
	Status string // overrides the status: events.StatusEscalated or events.StatusAborted
	// Success is the agent's own check of the output, when it has one; by default a run
	// succeeds when it ends without Err.
	Success *bool
}

// Finish records run.finished with totals computed from the run, then sends every buffered
// event (see Flush). After Finish the run records nothing more.
func (r *Run) Finish(ctx context.Context, res Result) error {
	p := events.RunFinished{Status: events.StatusSucceeded}
	if res.Output != nil {
		canon, err := canonical(res.Output)
		if err != nil {
			return fmt.Errorf("client: run output: %w", err)
		}
		p.Output = canon
	}
	if res.Err != nil {
		p.Status, p.Error = events.StatusFailed, res.Err.Error()
	}
	if res.Status != "" {
		p.Status = res.Status
		if p.Error == "" && p.Status != events.StatusSucceeded {
			p.Error = p.Status
		}
	}
	p.Success = p.Status == events.StatusSucceeded
	if res.Success != nil && p.Success {
		p.Success = *res.Success
	}
	r.mu.Lock()
	f := &r.fold
	p.Totals = events.Totals{
		PromptTokens: f.PromptTokens, CompletionTokens: f.CompletionTokens, ModelCalls: f.ModelCalls,
		ToolCalls: len(f.Tools), Retries: f.Retries, PlanReprompts: f.PlanReprompts,
		RejectedToolCalls: f.RejectedToolCalls, LatencyMS: float64(r.c.now().Sub(r.start).Microseconds()) / 1000,
	}
	err := r.recordLocked(p)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.Flush(ctx)
}

// Flush sends the buffered events and returns once the server stored them. Events that could
// not be sent stay buffered for the next Flush (re-sending is idempotent); events the server
// refused for good are dropped and reported in a *BatchError.
func (r *Run) Flush(ctx context.Context) error {
	r.mu.Lock()
	batch := r.buf
	r.buf = nil
	r.mu.Unlock()
	err := r.c.Send(ctx, batch)
	if _, rejected := err.(*BatchError); err != nil && !rejected {
		r.mu.Lock()
		r.buf = append(batch, r.buf...)
		r.mu.Unlock()
	}
	return err
}

// Pending returns the number of buffered events.
func (r *Run) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

func canonical(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return events.Canonical(x)
	case []byte:
		return events.Canonical(x)
	}
	return events.CanonicalValue(v)
}
