package coding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
)

// ErrContext is returned by Run for a condition whose context management cannot be configured
// (thresholds out of order once the tier's presets fill the zeros).
var ErrContext = errors.New("coding: context management")

// conversation is a run's messages and what manages them: the plain list when the condition
// leaves the context unmanaged, else a contextmgr.History under a Manager; and the Planner when
// planning is on. It belongs to one runner.
type conversation struct {
	msgs []llm.Message // unmanaged: the whole conversation

	mgr     *contextmgr.Manager // nil: unmanaged
	hist    *contextmgr.History
	sum     *summarizer
	planner *contextmgr.Planner // nil: planning off
	counter contextmgr.Counter
	n       int   // messages added, for their history ids
	err     error // the first message the history refused (a harness bug, reported as the run's failure)
}

// contextConfig is the contextmgr configuration of a condition's context: the tier's preset
// at the budget, with the condition's non-zero limits over it.
func contextConfig(c condition.Context) (contextmgr.Config, error) {
	if err := c.Validate(); err != nil {
		return contextmgr.Config{}, err
	}
	tier, err := contextmgr.ParseTier(c.Tier)
	if err != nil {
		return contextmgr.Config{}, err
	}
	cfg := contextmgr.Preset(tier, c.Budget)
	if c.Soft != 0 {
		cfg.Soft = c.Soft
	}
	if c.Hard != 0 {
		cfg.Hard = c.Hard
	}
	if c.Recent != 0 {
		cfg.Recent = c.Recent
	}
	if c.Bulky != 0 {
		cfg.Bulky = c.Bulky
	}
	if c.Hard == 0 && cfg.Hard < cfg.Soft { // a soft threshold set above the preset's hard one raises it
		cfg.Hard = cfg.Soft
	}
	return cfg, cfg.Validate()
}

// openConversation starts the conversation with its preamble (the system prompt and the task)
// and, under a managed condition, records context.configured.
func (r *runner) openConversation(preamble ...llm.Message) error {
	cv := &r.conv
	if r.comp.PlanTool {
		cv.planner = &contextmgr.Planner{}
	}
	if !r.spec.Condition.Context.Managed() {
		cv.msgs = append(cv.msgs, preamble...)
		return nil
	}
	cfg, err := contextConfig(r.spec.Condition.Context)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrContext, err)
	}
	cv.sum = &summarizer{model: r.model, spec: r.spec}
	if cv.mgr, err = contextmgr.New(cfg, cv.sum); err != nil {
		return fmt.Errorf("%w: %w", ErrContext, err)
	}
	cv.counter = contextmgr.BPE()
	cv.hist = contextmgr.NewHistory(cv.counter, preamble...)
	return r.emit(events.ContextConfigured{Tier: cfg.Tier.String(), Budget: cfg.Budget, Soft: cfg.Soft, Hard: cfg.Hard,
		Recent: cfg.Recent, Bulky: cfg.Bulky, SummaryTokens: cfg.SummaryTokens})
}

// add appends a message to the conversation; tool names the tool of a tool message.
func (r *runner) add(m llm.Message, tool string) {
	cv := &r.conv
	if cv.hist == nil {
		cv.msgs = append(cv.msgs, m)
		return
	}
	cv.n++
	id := fmt.Sprintf("m%d", cv.n)
	if m.Role == llm.RoleTool {
		id = fmt.Sprintf("o%d", cv.n) // an observation: the id its stub names for recall_event
	}
	if err := cv.hist.Add(id, m, tool); err != nil && cv.err == nil {
		cv.err = err
	}
}

// offered returns the tools of a request: the action space's, recall_event under the tiers
// that recall, update_plan with planning on.
func (r *runner) offered() []llm.ToolDef {
	tools := slices.Clone(r.tools)
	if r.conv.mgr != nil {
		tools = append(tools, r.conv.mgr.Tools()...)
	}
	if r.conv.planner != nil {
		tools = append(tools, contextmgr.PlanTool())
	}
	return tools
}

// errOverflowed is the error prepare returns when the request cannot fit the window.
var errOverflowed = errors.New("context window overflowed")

// prepare returns the messages of the next request (turn is its number, from 1): under a
// managed condition what the manager makes of the history, with its events (elision, each
// summarization call and its summary, the request's size, or the overflow), plus the plan or
// the reminder appended. It returns errOverflowed after recording context.overflowed, another
// error for a failed summarization (its model.called recorded), or an emit error.
func (r *runner) prepare(turn int, tools []llm.ToolDef) (msgs []llm.Message, estimate int, err error) {
	cv := &r.conv
	var appended []llm.Message
	if cv.planner != nil {
		if m, ok := cv.planner.Appended(turn == 1); ok {
			appended = append(appended, m)
		}
	}
	if cv.mgr == nil {
		return append(slices.Clip(cv.msgs), appended...), 0, nil
	}
	if cv.err != nil {
		return nil, 0, fmt.Errorf("context: %w", cv.err)
	}
	fixed := contextmgr.ToolTokens(cv.counter, tools) + r.spec.Sampling.MaxTokens
	for _, m := range appended {
		fixed += contextmgr.MessageTokens(cv.counter, m)
	}
	cv.sum.calls = cv.sum.calls[:0]
	p, perr := cv.mgr.Prepare(r.ctx, cv.hist, fixed)
	if p.Elided != nil || len(p.Trimmed) > 0 {
		el := events.ContextElided{Turn: turn, IDs: []string{}, Trimmed: p.Trimmed}
		if p.Elided != nil {
			el.Saved, el.Arguments, el.Dropped = p.Elided.Saved, p.Elided.Arguments, p.Elided.Dropped
			if p.Elided.IDs != nil {
				el.IDs = p.Elided.IDs
			}
		}
		if err := r.emit(el); err != nil {
			return nil, 0, err
		}
	}
	for i, c := range cv.sum.calls {
		if err := r.emit(c.event); err != nil {
			return nil, 0, err
		}
		if i < len(p.Summarized) {
			s := p.Summarized[i]
			if err := r.emit(events.ContextSummarized{Turn: turn, Folded: s.Folded, Steps: s.Steps, Before: s.Before,
				After: s.After, SummaryTokens: s.SummaryTokens}); err != nil {
				return nil, 0, err
			}
		}
	}
	var over *contextmgr.OverflowError
	switch {
	case errors.As(perr, &over):
		r.errText = over.Error()
		if err := r.emit(events.ContextOverflowed{Turn: turn, Tier: over.Tier.String(), Needed: over.Needed, Budget: over.Budget,
			Reason: over.Reason, Floor: over.Floor}); err != nil {
			return nil, 0, err
		}
		return nil, 0, errOverflowed
	case perr != nil:
		return nil, 0, fmt.Errorf("context: %w", perr)
	}
	msgs = append(p.Messages, appended...)
	if err := r.emit(events.ContextPrepared{Turn: turn, Tokens: p.Tokens, Budget: cv.mgr.Config().Budget,
		Messages: len(msgs), Recent: p.Recent}); err != nil {
		return nil, 0, err
	}
	return msgs, p.Tokens - r.spec.Sampling.MaxTokens, nil
}

// observe corrects the manager's estimates by the endpoint's count of the request's prompt.
func (r *runner) observe(estimate, reported int) {
	if r.conv.mgr != nil {
		r.conv.mgr.Observe(estimate, reported)
	}
}

// contextCall handles the calls of the tools context management and planning add:
// recall_event and update_plan. handled is false for any other tool.
func (r *runner) contextCall(tc llm.ToolCall, id string) (handled bool, err error) {
	cv := &r.conv
	switch {
	case tc.Name == contextmgr.RecallToolName && cv.mgr != nil && len(cv.mgr.Tools()) > 0:
	case tc.Name == contextmgr.PlanToolName && cv.planner != nil:
	default:
		return false, nil
	}
	canon, cerr := events.Canonical([]byte(tc.Arguments))
	if cerr != nil {
		canon, _ = events.CanonicalValue(clip(tc.Arguments, 64<<10))
		if err := r.emit(events.ToolRejected{CallID: id, Tool: tc.Name, Reason: events.RejectSchema, Args: canon,
			Detail: "arguments are not JSON: " + cerr.Error()}); err != nil {
			return true, err
		}
		r.reply(tc, id, failure(events.RejectSchema, "arguments are not JSON: "+cerr.Error()))
		return true, nil
	}
	if err := r.emit(events.ToolCalled{CallID: id, Tool: tc.Name, Args: canon}); err != nil {
		return true, err
	}
	t0 := time.Now()
	var out string
	var terr error
	if tc.Name == contextmgr.RecallToolName {
		out, terr = r.recall(tc, id)
	} else {
		out, terr = r.updatePlan(tc, id)
	}
	if terr != nil && !errors.Is(terr, errHandled) {
		return true, terr
	}
	ret := events.ToolReturned{CallID: id, Tool: tc.Name, OK: terr == nil, DurationMS: ms(time.Since(t0))}
	if terr != nil {
		ret.Error = clip(out, 4096)
		r.reply(tc, id, failure("tool_error", out))
	} else {
		ret.Output = outputValue(out)
		b, _ := json.Marshal(map[string]any{"ok": true, "output": out})
		r.reply(tc, id, string(b))
	}
	return true, r.emit(ret)
}

// errHandled marks a tool error told to the model (its text in the output), not a run error.
var errHandled = errors.New("tool error")

func (r *runner) recall(tc llm.ToolCall, id string) (string, error) {
	oid, err := contextmgr.ParseRecall(tc.Arguments)
	if err != nil {
		return err.Error(), errHandled
	}
	body, err := r.conv.mgr.Recall(oid)
	if err != nil {
		return fmt.Sprintf("no elided observation %q: %v", oid, err), errHandled
	}
	if err := r.emit(events.ContextRecalled{CallID: id, ID: oid, Tokens: r.conv.counter.Count(body)}); err != nil {
		return "", err
	}
	return body, nil
}

func (r *runner) updatePlan(tc llm.ToolCall, id string) (string, error) {
	p, err := r.conv.planner.Update(tc.Arguments)
	if err != nil {
		return err.Error(), errHandled
	}
	steps := make([]events.PlanUpdate, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = events.PlanUpdate{Step: s.Step, Status: s.Status}
	}
	if err := r.emit(events.PlanUpdated{CallID: id, Explanation: clip(p.Explanation, 4096), Steps: steps}); err != nil {
		return "", err
	}
	return "plan updated", nil
}

// summarizer is the M3 Summarizer of a run: a request to the run's own model with the run's
// pinned seed and sampling, whose calls are kept so that the runner records each as a
// model.called of purpose summarize (before the context.summarized it wrote).
type summarizer struct {
	model llm.Model
	spec  harness.RunSpec
	calls []summaryCall
}

type summaryCall struct{ event events.ModelCalled }

var _ contextmgr.Summarizer = (*summarizer)(nil)

// Summarize sends contextmgr.SummaryRequest with the run's model, seed and sampling (the
// completion capped at maxTokens) and keeps the call, failed or not.
func (s *summarizer) Summarize(ctx context.Context, prior string, folded []llm.Message, maxTokens int) (contextmgr.Summary, error) {
	req := contextmgr.SummaryRequest(s.spec.Model, prior, folded, maxTokens)
	req.Seed, req.Temperature, req.TopP = s.spec.Seed, s.spec.Sampling.Temperature, s.spec.Sampling.TopP
	t0 := time.Now()
	resp, err := s.model.Chat(ctx, req)
	mc := events.ModelCalled{Model: s.spec.Model, Purpose: events.PurposeSummarize, PromptTokens: int64(resp.Usage.PromptTokens),
		CompletionTokens: int64(resp.Usage.CompletionTokens), LatencyMS: ms(time.Since(t0)), FinishReason: resp.FinishReason,
		Fingerprint: resp.SystemFingerprint, Seed: s.spec.Seed, TransportRetries: len(resp.Retries)}
	if err == nil && strings.TrimSpace(resp.Content) == "" {
		err = fmt.Errorf("the model returned no summary (finish reason %q)", resp.FinishReason)
	}
	if err != nil {
		mc.Error = clip(err.Error(), 64<<10)
		s.calls = append(s.calls, summaryCall{mc})
		return contextmgr.Summary{}, fmt.Errorf("summarization: %w", err)
	}
	s.calls = append(s.calls, summaryCall{mc})
	return contextmgr.Summary{Text: resp.Content, Usage: resp.Usage, Model: resp.Model, Latency: resp.Latency}, nil
}
