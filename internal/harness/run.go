package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// Run executes one agent run of spec against model and reports every step to em, in order:
// run.started, the plan events, then state, model, tool, validation, retry and escalation
// events as they happen, and run.finished last. The run's own failures (a model that keeps
// erring, an escalation, a cancelled ctx) are outcomes recorded in the Result and in
// run.finished, not errors. Run returns an error only when the spec is invalid (nothing is
// emitted) or when em fails (wrapped in ErrEmit; the events are then incomplete and the
// caller must not treat the run as recorded).
func Run(ctx context.Context, spec RunSpec, model llm.Model, em Emitter) (Result, error) {
	if err := spec.Validate(); err != nil {
		return Result{}, err
	}
	task, err := tasks.Get(spec.Task)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	inst, err := task.Instance(spec.Instance)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	r := &runner{
		ctx: ctx, spec: spec, comp: spec.Condition.Components, lim: spec.Condition.Limits.WithDefaults(),
		task: task, inst: inst, model: model, em: em, retries: map[string]int{},
	}
	r.graph = r.comp.FSM || r.comp.ForcedTool
	for _, t := range task.Tools {
		r.allTools = append(r.allTools, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	err = r.run()
	return r.res, err
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
	res      Result
	tokens   int64

	cur       *tasks.State // graph cursor
	entered   string       // the state entered and not yet exited
	done      bool         // the terminal state's tool was accepted
	final     json.RawMessage
	escalated bool
	aborted   bool

	failState  string // state of the last failure
	failReason string
	failStreak int            // consecutive failed turns
	retries    map[string]int // retries scheduled per state
	callN      int
}

func (r *runner) run() error {
	r.start = time.Now()
	r.msgs = []llm.Message{
		{Role: llm.RoleSystem, Content: r.task.Instructions},
		{Role: llm.RoleUser, Content: r.inst.Prompt},
	}
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

func (r *runner) emit(p events.Payload) error {
	ctx := r.ctx
	if p.EventType() == events.TypeRunFinished {
		// A cancelled run must still be recorded as finished (aborted).
		ctx = context.WithoutCancel(ctx)
	}
	if err := r.em.Emit(ctx, p); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrEmit, p.EventType(), err)
	}
	return nil
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
// false when the call failed; the run then stops (aborted if ctx ended, else failed).
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
	r.res.Totals.ModelCalls++
	r.res.Totals.PromptTokens += mc.PromptTokens
	r.res.Totals.CompletionTokens += mc.CompletionTokens
	r.tokens += mc.PromptTokens + mc.CompletionTokens
	if err := r.emit(mc); err != nil {
		return llm.Response{}, false, err
	}
	if cerr != nil {
		if r.ctx.Err() != nil {
			r.aborted = true
			r.res.Error = "cancelled: " + r.ctx.Err().Error()
		} else {
			r.res.Error = "model: " + cerr.Error()
		}
		return llm.Response{}, false, nil
	}
	return resp, true, nil
}

// overBudget trips the circuit breaker's token budget.
func (r *runner) overBudget() bool {
	return r.comp.CircuitBreaker && r.tokens > r.lim.TokenBudget
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
		r.res.Plan = clip(resp.Content, maxTextBytes)
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
		r.res.Plan = clip(resp.Content, maxTextBytes)
		steps, errs := parsePlan(r.task, resp.Content)
		// No tool runs before a valid plan: calls made now are refused, and never answered
		// with a tool message because the assistant message is recorded without them.
		for _, tc := range resp.ToolCalls {
			if err := r.emit(events.ToolRejected{CallID: r.callID(tc), Tool: toolName(tc), Reason: events.RejectUnauthorized,
				Detail: "no tool may run before a plan is accepted", Args: recordedArgs(tc)}); err != nil {
				return false, err
			}
			r.res.Totals.RejectedToolCalls++
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
			r.res.Plan = string(events.MustCanonical(steps))
			r.msgs = append(r.msgs, llm.Message{Role: llm.RoleUser, Content: proceedPrompt})
			return true, nil
		}
		if err := r.emit(events.PlanRejected{Errors: errs, Attempt: attempt}); err != nil {
			return false, err
		}
		r.res.Totals.PlanReprompts++ // counted per rejection, as the events fold does
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
					Detail: fmt.Sprintf("token budget of %d exhausted", r.lim.TokenBudget), Args: recordedArgs(tc), State: r.entered}); err != nil {
					return err
				}
				r.res.Totals.RejectedToolCalls++
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
	if r.res.Error == "" && !r.done && r.graph {
		r.res.Error = fmt.Sprintf("step cap: %d model turns without completing the workflow", r.lim.MaxSteps)
	}
	return nil
}

// failedTurn applies retry and the circuit breaker after a turn that made no progress.
func (r *runner) failedTurn() (stop bool, err error) {
	r.failStreak++
	state := r.failState
	if r.comp.Retry {
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
		r.res.Totals.Retries++
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
	r.escalated, r.res.EscalationReason = true, reason
	if err := r.emit(events.RunEscalated{Reason: reason, State: r.failStateOr()}); err != nil {
		return err
	}
	if r.entered != "" {
		return r.exit("escalated")
	}
	return nil
}

func (r *runner) failStateOr() string {
	if r.entered != "" {
		return r.entered
	}
	return r.failState
}

func (r *runner) enter(state, from string) error {
	r.entered = state
	r.res.States = append(r.res.States, state)
	return r.emit(events.StateEntered{State: state, From: from})
}

func (r *runner) exit(outcome string) error {
	s := r.entered
	r.entered = ""
	return r.emit(events.StateExited{State: s, Outcome: outcome})
}

func (r *runner) callID(tc llm.ToolCall) string {
	r.callN++
	if tc.ID != "" {
		return clip(tc.ID, 128)
	}
	return fmt.Sprintf("call_%d", r.callN)
}

func toolName(tc llm.ToolCall) string {
	if tc.Name == "" {
		return "(unnamed)"
	}
	return clip(tc.Name, 128)
}

// recordedArgs is what an event records of a call's arguments: canonical JSON, the raw text as
// a JSON string when it is not JSON, nothing when it is too large to record.
func recordedArgs(tc llm.ToolCall) json.RawMessage {
	if len(tc.Arguments) > maxArgsBytes {
		return nil
	}
	args, _ := canonicalArgs(tc.Arguments, events.Canonical)
	return args
}

// toolMsg answers a tool call in the conversation.
func (r *runner) toolMsg(id string, body map[string]any) {
	b, _ := json.Marshal(body) // maps of strings, string slices and canonical JSON always marshal
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: string(b)})
}

func failure(kind, detail string) map[string]any {
	return map[string]any{"ok": false, "error": kind, "detail": detail}
}

// handleCall passes one tool call through the gates, executes it and accepts its output.
// accepted reports progress: the output was accepted (and, under graph execution, the run
// moved on).
func (r *runner) handleCall(tc llm.ToolCall) (accepted bool, err error) {
	id := r.callID(tc)
	if len(tc.Arguments) > maxArgsBytes {
		// Too large to record as an event: refuse it whatever the gates, recording its size.
		r.failState, r.failReason = r.failStateOr(), "rejected: arguments too large"
		detail := fmt.Sprintf("arguments of %d bytes exceed the limit of %d", len(tc.Arguments), maxArgsBytes)
		if err := r.emit(events.ToolRejected{CallID: id, Tool: toolName(tc), Reason: events.RejectSchema, Detail: detail,
			State: r.failStateOr()}); err != nil {
			return false, err
		}
		r.res.Totals.RejectedToolCalls++
		r.toolMsg(id, failure("schema", detail))
		return false, nil
	}
	args, isJSON := canonicalArgs(tc.Arguments, events.Canonical)
	tool, known := r.task.ToolByName(tc.Name)
	var st *tasks.State
	switch {
	case r.graph:
		st = r.cur
	case known:
		st, _ = r.task.StateOfTool(tool.Name)
	}
	stateName := ""
	if st != nil {
		stateName = st.Name
	}
	r.failState = stateName
	reject := func(reason, kind, detail string, extra map[string]any) (bool, error) {
		r.failReason = "rejected: " + reason
		if err := r.emit(events.ToolRejected{CallID: id, Tool: toolName(tc), Reason: reason, Detail: detail, Args: args, State: stateName}); err != nil {
			return false, err
		}
		r.res.Totals.RejectedToolCalls++
		body := failure(kind, detail)
		for k, v := range extra {
			body[k] = v
		}
		r.toolMsg(id, body)
		return false, nil
	}

	switch {
	case r.done:
		return reject(events.RejectUnauthorized, "unauthorized", "the workflow is complete", nil)
	case !known:
		return reject(events.RejectUnauthorized, "unauthorized", fmt.Sprintf("unknown tool %q", toolName(tc)), nil)
	case r.graph && tc.Name != r.cur.Tool:
		return reject(events.RejectUnauthorized, "unauthorized",
			fmt.Sprintf("state %s authorizes only %s", r.cur.Name, r.cur.Tool), map[string]any{"allowed_tool": r.cur.Tool})
	}
	raw := []byte(tc.Arguments)
	if r.comp.SchemaGate {
		if !isJSON {
			return reject(events.RejectSchema, "schema", "arguments are not valid JSON", nil)
		}
		s, err := toolSchema(r.task, tool)
		if err != nil {
			return false, err
		}
		if v := checkSchema(s, args); len(v) > 0 {
			return reject(events.RejectSchema, "schema", strings.Join(v, "; "), map[string]any{"violations": v})
		}
	}
	if r.comp.PermissionGate {
		res := raw
		if isJSON {
			res = args
		}
		if out := tasks.OutOfScope(r.inst.Scope, tool.Resources(res)); len(out) > 0 {
			return reject(events.RejectPermission, "permission",
				fmt.Sprintf("outside the allowed scope: %s", strings.Join(out, ", ")), nil)
		}
	}

	if !r.graph {
		if err := r.enter(st.Name, ""); err != nil {
			return false, err
		}
	}
	if err := r.emit(events.ToolCalled{CallID: id, Tool: tool.Name, Args: args, State: st.Name}); err != nil {
		return false, err
	}
	r.res.Totals.ToolCalls++
	r.res.Tools = append(r.res.Tools, tool.Name)
	t0 := time.Now()
	out, xerr := tool.Exec(r.ctx, r.inst, raw)
	dur := time.Since(t0)
	var canonOut json.RawMessage
	if xerr == nil {
		c, cerr := events.Canonical(out)
		if cerr != nil {
			xerr = fmt.Errorf("harness: tool output is not JSON: %w", cerr)
		} else {
			canonOut = c
		}
	}
	ret := events.ToolReturned{CallID: id, Tool: tool.Name, OK: xerr == nil, Output: canonOut, DurationMS: ms(dur)}
	if xerr != nil {
		ret.Error = xerr.Error()
	}
	if err := r.emit(ret); err != nil {
		return false, err
	}
	fail := func(reason, kind, detail string, extra map[string]any) (bool, error) {
		r.failReason = reason
		body := failure(kind, detail)
		for k, v := range extra {
			body[k] = v
		}
		r.toolMsg(id, body)
		if !r.graph {
			return false, r.exit(reason)
		}
		return false, nil
	}
	if xerr != nil {
		return fail("tool_error", "tool_error", xerr.Error(), nil)
	}
	if r.comp.Validation {
		if probs := st.Validate(canonOut); len(probs) > 0 {
			if err := r.emit(events.OutputInvalid{State: st.Name, Tool: tool.Name, Errors: probs}); err != nil {
				return false, err
			}
			return fail("output_invalid", "output_invalid", "the output failed validation", map[string]any{"problems": probs})
		}
		if err := r.emit(events.OutputValidated{State: st.Name, Tool: tool.Name}); err != nil {
			return false, err
		}
	}
	next := ""
	if r.graph && !st.Terminal() {
		n, rerr := st.Successor(canonOut)
		if rerr != nil {
			return fail("route", "route", rerr.Error(), nil)
		}
		next = n
	}
	// Built by hand: canonOut is canonical JSON already, and re-marshalling it would scan it again.
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: `{"ok":true,"output":` + string(canonOut) + `}`})
	if tool.Name == r.task.FinalTool {
		r.final = canonOut
	}
	if err := r.exit("ok"); err != nil {
		return false, err
	}
	if r.graph {
		if st.Terminal() {
			r.done = true
			return true, nil
		}
		r.cur, _ = r.task.StateByName(next)
		if err := r.enter(next, st.Name); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (r *runner) finish() error {
	switch {
	case r.escalated:
		r.res.Status = events.StatusEscalated
	case r.aborted:
		r.res.Status = events.StatusAborted
	case r.final != nil && r.task.Check(r.inst, r.final):
		r.res.Status, r.res.Success = events.StatusSucceeded, true
	default:
		r.res.Status = events.StatusFailed
		if r.final == nil && r.res.Error == "" {
			r.res.Error = "no final output"
		}
	}
	if r.entered != "" {
		if err := r.exit(r.res.Status); err != nil {
			return err
		}
	}
	r.res.Output = r.final
	r.res.Latency = time.Since(r.start)
	r.res.Totals.LatencyMS = ms(r.res.Latency)
	return r.emit(events.RunFinished{Status: r.res.Status, Output: r.final, Success: r.res.Success,
		Totals: r.res.Totals, Error: r.res.Error})
}

// Bounds on model-provided values copied into events, so that every event stays well under
// events.MaxEventSize whatever a model returns.
const (
	maxTextBytes = 64 << 10
	maxArgsBytes = 256 << 10
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
