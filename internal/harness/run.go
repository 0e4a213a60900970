package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// Run executes one agent run of spec against model and reports every step to em, in order:
// run.started, the plan events, then state, model, tool, validation, retry and escalation
// events as they happen, and run.finished last. How a run ends is an outcome recorded in the
// Result and in run.finished, not an error: the agent's own failures (a wrong output, an
// escalation, a context window exceeded), a model or tool server that never answered (errored,
// with its cause) and a cancelled ctx (aborted). Run returns an error only when the spec is invalid (nothing is
// emitted) or when em fails (wrapped in ErrEmit; the events are then incomplete and the
// caller must not treat the run as recorded).
//
// The harness keeps one record of what the run did: the fold (events.Run) of the events it
// emits. Each event is folded before it is emitted, so em never receives a history the fold
// refuses; such a history would be a defect of the harness, and Run returns it as ErrHistory
// (the events are then incomplete, as with ErrEmit). The Result's plan, states, tools, output
// and totals, and run.finished's totals, are read from that fold.
func Run(ctx context.Context, spec RunSpec, model llm.Model, em Emitter) (Result, error) {
	if err := spec.Validate(); err != nil {
		return Result{}, err
	}
	task := spec.TaskDef
	if task == nil {
		var err error
		if task, err = tasks.Get(spec.Task); err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrSpec, err)
		}
	}
	inst, err := task.Instance(spec.Instance)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	r := &runner{
		ctx: ctx, spec: spec, comp: spec.Condition.Components, lim: spec.Condition.Limits.WithDefaults(),
		task: task, inst: inst, model: model, em: em,
		allTools: make([]llm.ToolDef, 0, len(task.Tools)),
	}
	r.graph = r.comp.FSM || r.comp.ForcedTool
	for _, t := range task.Tools {
		r.allTools = append(r.allTools, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	err = r.run()
	return r.result(), err
}

type runner struct {
	ctx   context.Context
	spec  RunSpec
	comp  condition.Components
	lim   condition.Limits
	graph bool // the harness follows the task graph (fsm or forced_tool)
	task  *tasks.Task
	inst  *tasks.Instance
	model llm.Model
	em    Emitter

	start    time.Time
	msgs     []llm.Message
	allTools []llm.ToolDef

	// books is the fold of every event emitted so far: what the run did (plan, states entered,
	// the state currently entered, tools, tokens, counts) is read from it and nowhere else.
	books events.Run

	// What the harness decided, beside the books.
	cur        *tasks.State // graph cursor
	done       bool         // the terminal state's tool was accepted
	final      json.RawMessage
	aborted    bool
	overflow   bool         // the model refused the conversation: longer than its context window
	cause      events.Cause // why the run errored (Kind "" while it has not)
	escalation string       // the reason of run.escalated
	status     string       // of run.finished
	success    bool
	errText    string // why the run stopped early, when known
	latency    time.Duration

	failState  string // state of the last failure
	failReason string
	failStreak int            // consecutive failed turns
	retries    map[string]int // retries scheduled per state; nil until the first
	callN      int
}

func (r *runner) run() error {
	r.start = time.Now()
	// Room for a run without failures: four messages of planning, then an assistant and a
	// tool message per state.
	r.msgs = make([]llm.Message, 0, 6+2*len(r.task.States))
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleSystem, Content: r.task.Instructions},
		llm.Message{Role: llm.RoleUser, Content: r.inst.Prompt})
	if err := r.emit(r.started()); err != nil {
		return err
	}
	proceed, err := r.plan()
	if err != nil {
		return err
	}
	if proceed {
		if err := r.act(); err != nil {
			return err
		}
	}
	return r.finish()
}

// emit folds p into the books, then hands it to the Emitter: an event the fold refuses is
// never emitted.
func (r *runner) emit(p events.Payload) error {
	t := p.EventType()
	// The envelope's identity is the Emitter's; the books need only the order.
	e := events.Envelope{Type: t, Seq: r.books.LastSeq + 1, Payload: p}
	if err := r.books.Apply(&e); err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	ctx := r.ctx
	if t == events.TypeRunFinished {
		// A cancelled run must still be recorded as finished (aborted).
		ctx = context.WithoutCancel(ctx)
	}
	if err := r.em.Emit(ctx, p); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrEmit, t, err)
	}
	return nil
}

// result is the Result: the harness's decisions, and what the books say the run did.
func (r *runner) result() Result {
	totals := r.books.Totals()
	totals.LatencyMS = ms(r.latency)
	return Result{Status: r.status, Success: r.success, Output: r.books.Output, Plan: r.books.Plan,
		States: r.books.States, Tools: r.books.Tools, EscalationReason: r.escalation, Error: r.errText,
		Cause: r.cause, Totals: totals, Latency: r.latency}
}

func (r *runner) started() events.RunStarted {
	graph := make(map[string][]string, len(r.task.States))
	for _, s := range r.task.States {
		graph[s.Name] = append([]string{}, s.Next...)
	}
	return events.RunStarted{
		Task: r.task.Name, Instance: r.inst.ID, InputIndex: r.spec.Instance, SeedIndex: r.spec.SeedIndex,
		Model: r.spec.Model, Condition: r.spec.Condition.Name, Components: r.comp.Names(), Seed: r.spec.Seed,
		Sampling: r.spec.Sampling, Endpoint: r.spec.Endpoint, Simulated: r.spec.Simulated,
		Start: r.task.Start, Graph: graph,
	}
}

// call sends one request with the run's pinned parameters and records model.called. ok is
// false when the call failed; the run then stops: aborted if ctx ended, overflow if the
// conversation outgrew the context window, else errored with the failure as its cause (the
// model never answered: that is the infrastructure's failure, not the agent's).
func (r *runner) call(purpose string, req llm.Request) (resp llm.Response, ok bool, err error) {
	if r.ctx.Err() != nil {
		r.aborted = true
		return llm.Response{}, false, nil
	}
	req.Model, req.Seed, req.Messages = r.spec.Model, r.spec.Seed, r.msgs
	req.Temperature, req.TopP, req.MaxTokens = r.spec.Sampling.Temperature, r.spec.Sampling.TopP, r.spec.Sampling.MaxTokens
	t0 := time.Now()
	resp, cerr := r.model.Chat(r.ctx, req)
	latency := time.Since(t0)
	mc := events.ModelCalled{
		Model: r.spec.Model, Purpose: purpose, PromptTokens: int64(resp.Usage.PromptTokens),
		CompletionTokens: int64(resp.Usage.CompletionTokens), LatencyMS: ms(latency),
		FinishReason: resp.FinishReason, Fingerprint: resp.SystemFingerprint, Seed: r.spec.Seed,
		TransportRetries: len(resp.Retries),
	}
	if cerr != nil {
		var ce *llm.CallError
		if errors.As(cerr, &ce) {
			mc.TransportRetries = len(ce.Retries)
		}
		mc.Error = clip(cerr.Error(), maxTextBytes)
	}
	if err := r.emit(mc); err != nil {
		return llm.Response{}, false, err
	}
	if cerr != nil {
		var ce *llm.CallError
		switch {
		case r.ctx.Err() != nil:
			r.aborted = true
			r.errText = "cancelled: " + r.ctx.Err().Error()
			return llm.Response{}, false, nil
		case errors.As(cerr, &ce) && ce.Kind == llm.KindContextLength:
			r.overflow = true
		default:
			r.cause = causeOf(cerr, r.spec.Endpoint)
		}
		r.errText = clip("model: "+cerr.Error(), maxTextBytes)
		return llm.Response{}, false, nil
	}
	return resp, true, nil
}

// causeOf is the cause of an errored run whose model call failed with err.
func causeOf(err error, endpoint string) events.Cause {
	c := events.Cause{Kind: events.CauseOther, Endpoint: endpoint, Attempts: 1, Detail: clip(err.Error(), maxCauseBytes)}
	var ce *llm.CallError
	if errors.As(err, &ce) { // else a Model that does not return a *CallError, against its contract
		c.Permanent, c.HTTPStatus, c.Attempts = ce.Permanent(), ce.StatusCode, ce.Attempts
		if ce.Kind != "" {
			c.Kind = ce.Kind
		}
		if ce.Detail != "" {
			c.Detail = clip(ce.Detail, maxCauseBytes)
		}
	}
	return c
}

// overBudget trips the circuit breaker's token budget.
func (r *runner) overBudget() bool {
	return r.comp.CircuitBreaker && r.books.PromptTokens+r.books.CompletionTokens > r.lim.TokenBudget
}

// plan runs the planning phase; proceed is false when the run must stop.
func (r *runner) plan() (proceed bool, err error) {
	if !r.comp.StructuredPlanning {
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: freePlanPrompt})
		resp, ok, err := r.call("plan", llm.Request{})
		if err != nil || !ok {
			return false, err
		}
		if err := r.emit(events.PlanProposed{Text: clip(resp.Content, maxTextBytes), Attempt: 1}); err != nil {
			return false, err
		}
		if r.overBudget() {
			return false, r.escalate("token_budget")
		}
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content},
			llm.Message{Role: llm.RoleUser, Content: proceedPrompt})
		return true, nil
	}
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: structuredPlanPrompt(r.task)})
	format := planFormat(r.task)
	for attempt := 1; ; attempt++ {
		resp, ok, err := r.call("plan", llm.Request{ResponseFormat: format})
		if err != nil || !ok {
			return false, err
		}
		if err := r.emit(events.PlanProposed{Text: clip(resp.Content, maxTextBytes), Attempt: attempt, Structured: true}); err != nil {
			return false, err
		}
		steps, errs := parsePlan(r.task, resp.Content)
		// No tool runs before a valid plan: calls made now are refused, and never answered
		// with a tool message because the assistant message is recorded without them.
		for _, tc := range resp.ToolCalls {
			if err := r.emit(events.ToolRejected{CallID: r.callID(tc), Tool: toolName(tc), Reason: events.RejectUnauthorized,
				Detail: "no tool may run before a plan is accepted", Args: recordedArgs(tc)}); err != nil {
				return false, err
			}
		}
		if len(resp.ToolCalls) > 0 {
			steps, errs = nil, append(errs, "tool calls are not allowed before the plan is accepted")
		}
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
		if r.overBudget() {
			return false, r.escalate("token_budget")
		}
		if len(errs) == 0 {
			if err := r.emit(events.PlanAccepted{Steps: steps}); err != nil {
				return false, err
			}
			r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: proceedPrompt})
			return true, nil
		}
		if err := r.emit(events.PlanRejected{Errors: errs, Attempt: attempt}); err != nil {
			return false, err
		}
		if attempt > r.lim.MaxPlanReprompts {
			return false, r.escalate("plan_rejected")
		}
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: planRejectedPrompt(errs)})
	}
}

// act runs the model turns after planning.
func (r *runner) act() error {
	if r.graph {
		r.cur, _ = r.task.StateByName(r.task.Start)
		if err := r.enter(r.cur.Name, ""); err != nil {
			return err
		}
	}
	for step := 0; step < r.lim.MaxSteps; step++ {
		req := llm.Request{Tools: r.allTools, ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceAuto}}
		if r.graph && r.comp.ForcedTool {
			tool, _ := r.task.ToolByName(r.cur.Tool)
			req.Tools = []llm.ToolDef{{Name: tool.Name, Description: tool.Description, Parameters: tool.Schema}}
			req.ToolChoice = &llm.ToolChoice{Mode: llm.ToolChoiceFunction, Name: tool.Name}
		}
		resp, ok, err := r.call("act", req)
		if err != nil || !ok {
			return err
		}
		r.msgs = append(r.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		if r.overBudget() {
			for _, tc := range resp.ToolCalls {
				if err := r.emit(events.ToolRejected{CallID: r.callID(tc), Tool: toolName(tc), Reason: events.RejectBudget,
					Detail: fmt.Sprintf("token budget of %d exhausted", r.lim.TokenBudget), Args: recordedArgs(tc), State: r.books.Current}); err != nil {
					return err
				}
			}
			return r.escalate("token_budget")
		}
		if len(resp.ToolCalls) == 0 {
			if !r.comp.FSM {
				return nil // the model stopped
			}
			r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser,
				Content: fmt.Sprintf("The workflow is in state %s and needs a call to %s.", r.cur.Name, r.cur.Tool)})
			r.failState, r.failReason = r.cur.Name, "no tool call"
			if stop, err := r.failedTurn(); stop || err != nil {
				return err
			}
			continue
		}
		progress, failed := false, false
		for _, tc := range resp.ToolCalls {
			accepted, err := r.handleCall(tc)
			if err != nil {
				return err
			}
			if r.cause.Kind != "" {
				return nil // a tool server is down: the run errored
			}
			progress, failed = progress || accepted, failed || !accepted
		}
		if r.done {
			return nil
		}
		switch {
		case progress:
			r.failStreak = 0
		case failed:
			if stop, err := r.failedTurn(); stop || err != nil {
				return err
			}
		}
	}
	if r.errText == "" && !r.done && r.graph {
		r.errText = fmt.Sprintf("step cap: %d model turns without completing the workflow", r.lim.MaxSteps)
	}
	return nil
}

// failedTurn applies retry and the circuit breaker after a turn that made no progress.
func (r *runner) failedTurn() (stop bool, err error) {
	r.failStreak++
	state := r.failState
	if r.comp.Retry {
		if r.retries == nil {
			r.retries = map[string]int{}
		}
		r.retries[state]++
		if r.retries[state] > r.lim.MaxRetries {
			return true, r.escalate("retries_exhausted")
		}
		// A retry re-enters the state under graph execution, so that repeats show in states.
		if r.graph {
			if err := r.exit("retry"); err != nil {
				return true, err
			}
		}
		if err := r.emit(events.RetryScheduled{State: state, Attempt: r.retries[state], Reason: r.failReason}); err != nil {
			return true, err
		}
		if r.graph {
			if err := r.enter(state, state); err != nil {
				return true, err
			}
		}
	}
	if r.comp.CircuitBreaker && r.failStreak > r.lim.MaxRepairTurns {
		return true, r.escalate("circuit_breaker")
	}
	return false, nil
}

func (r *runner) escalate(reason string) error {
	r.escalation = reason
	if err := r.emit(events.RunEscalated{Reason: reason, State: r.failStateOr()}); err != nil {
		return err
	}
	if r.books.Current != "" {
		return r.exit("escalated")
	}
	return nil
}

// failStateOr is the state entered, or else the state of the last failure.
func (r *runner) failStateOr() string {
	return cmp.Or(r.books.Current, r.failState)
}

func (r *runner) enter(state, from string) error {
	return r.emit(events.StateEntered{State: state, From: from})
}

// exit leaves the state entered.
func (r *runner) exit(outcome string) error {
	return r.emit(events.StateExited{State: r.books.Current, Outcome: outcome})
}

// finish decides the run's status, leaves the state entered and records run.finished with the
// totals of the books.
func (r *runner) finish() error {
	switch {
	case r.books.Escalated:
		r.status = events.StatusEscalated
	case r.aborted:
		r.status = events.StatusAborted
	case r.cause.Kind != "":
		r.status = events.StatusErrored
	case r.overflow:
		r.status = events.StatusOverflow
	case r.final != nil && r.task.Check(r.inst, r.final):
		r.status, r.success = events.StatusSucceeded, true
	default:
		r.status = events.StatusFailed
		if r.final == nil && r.errText == "" {
			r.errText = "no final output"
		}
	}
	if r.books.Current != "" {
		if err := r.exit(r.status); err != nil {
			return err
		}
	}
	r.latency = time.Since(r.start)
	totals := r.books.Totals()
	totals.LatencyMS = ms(r.latency)
	return r.emit(events.RunFinished{Status: r.status, Output: r.final, Success: r.success, Totals: totals, Error: r.errText,
		Cause: r.cause})
}

// Bounds on model-provided values copied into events, so that every event stays well under
// events.MaxEventSize whatever a model returns.
const (
	maxTextBytes  = 64 << 10
	maxArgsBytes  = 256 << 10
	maxCauseBytes = 1 << 10
)

// clip truncates s to at most n bytes (on a rune boundary) and says how much was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes truncated]", len(s)-cut)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
