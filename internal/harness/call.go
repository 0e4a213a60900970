package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// toolCall is one tool call of a model response on its way through gate, execute and accept.
type toolCall struct {
	id   string       // as recorded: the model's id (clipped), or call_<n> when it gave none
	sent llm.ToolCall // as the model sent it
	// Arguments small enough to record (the first gate refuses the others, which are not read):
	raw    []byte          // as sent
	args   json.RawMessage // as recorded: canonical JSON, or the raw text as a JSON string
	isJSON bool
	tool   *tasks.Tool  // nil when the task has no tool of that name
	st     *tasks.State // the state the call is made in: the graph cursor, else its tool's state; nil if none
	// state is the state recorded with a refusal: st's name; for arguments too large, the state
	// entered or else the state of the last failure.
	state string
	// key is the call's idempotency key, for a tool served outside ditto ("" otherwise).
	key string
	// attempts counts the tool's executions for this call (retries included).
	attempts int
}

// newCall numbers a call and resolves what the gates read: its arguments, tool and state.
func (r *runner) newCall(sent llm.ToolCall) toolCall {
	c := toolCall{id: r.callID(sent), sent: sent}
	if len(sent.Arguments) > maxArgsBytes {
		c.state = r.failStateOr()
		return c
	}
	c.raw = []byte(sent.Arguments)
	c.args, c.isJSON = canonicalArgs(sent.Arguments, events.Canonical)
	c.tool, _ = r.task.ToolByName(sent.Name)
	switch {
	case r.graph:
		c.st = r.cur
	case c.tool != nil:
		c.st, _ = r.task.StateOfTool(c.tool.Name)
	}
	if c.st != nil {
		c.state = c.st.Name
	}
	return c
}

// callFailure is why a call made no progress: a gate refused it (kind is then the reason
// recorded in tool.rejected, one of events.Reject*), or it ran without an accepted output (kind
// is tool_error, output_invalid or route). The model reads kind, detail and extra in the tool
// message that answers the call.
type callFailure struct {
	kind   string
	detail string
	extra  map[string]any // further fields of the tool message
	cause  string         // the failed turn's reason, when not derived from kind
}

// message is the tool message body answering the failed call.
func (f *callFailure) message() map[string]any {
	body := map[string]any{"ok": false, "error": f.kind, "detail": f.detail}
	for k, v := range f.extra {
		body[k] = v
	}
	return body
}

// handleCall takes one tool call of a model response through its three steps: gate (may it
// run?), execute (run it, recording tool.called and tool.returned) and accept (is its output
// progress?). Every call is answered in the conversation by one tool message, and leaves
// failState and failReason saying where and why it failed, for the failed turn that follows.
// accepted reports progress: the output was accepted (and, under graph execution, the run
// moved on). err is an emit failure or a tool schema that does not compile; the run stops.
func (r *runner) handleCall(sent llm.ToolCall) (accepted bool, err error) {
	c := r.newCall(sent)
	r.failState = c.state
	refused, err := r.gate(&c)
	if err != nil {
		return false, err
	}
	if refused != nil {
		return false, r.reject(&c, refused)
	}
	ret, err := r.execute(&c)
	if err != nil {
		return false, err
	}
	if errors.Is(ret.err, tasks.ErrToolUnavailable) {
		// The tool's server never answered: the run cannot go on, and how it ends says
		// nothing about the agent.
		r.cause = events.Cause{Kind: events.CauseToolServer, Endpoint: c.tool.Name, Attempts: c.attempts, Detail: clip(ret.err.Error(), maxCauseBytes)}
		r.errText = clip("tool "+c.tool.Name+": "+ret.err.Error(), maxTextBytes)
		return false, nil
	}
	return r.accept(&c, ret.ToolReturned)
}

// gate decides whether a call may run. It checks, in this order, that the arguments are small
// enough to record, that the workflow is not complete, that the task has the tool, under graph
// execution that the current state authorizes it, with schema_gate that the arguments are JSON
// valid against the tool's schema, and with permission_gate that every resource the call
// touches is inside the instance's scope. It returns the first refusal, or nil when the call
// may run; nothing has run either way. err is a tool schema that does not compile.
func (r *runner) gate(c *toolCall) (*callFailure, error) {
	if len(c.sent.Arguments) > maxArgsBytes {
		return &callFailure{kind: events.RejectSchema, cause: "arguments too large",
			detail: fmt.Sprintf("arguments of %d bytes exceed the limit of %d", len(c.sent.Arguments), maxArgsBytes)}, nil
	}
	switch {
	case r.done:
		return &callFailure{kind: events.RejectUnauthorized, detail: "the workflow is complete"}, nil
	case c.tool == nil:
		return &callFailure{kind: events.RejectUnauthorized, detail: fmt.Sprintf("unknown tool %q", toolName(c.sent))}, nil
	case r.graph && c.tool.Name != r.cur.Tool:
		return &callFailure{kind: events.RejectUnauthorized, detail: fmt.Sprintf("state %s authorizes only %s", r.cur.Name, r.cur.Tool),
			extra: map[string]any{"allowed_tool": r.cur.Tool}}, nil
	}
	if r.comp.SchemaGate {
		if !c.isJSON {
			return &callFailure{kind: events.RejectSchema, detail: "arguments are not valid JSON"}, nil
		}
		s, err := toolSchema(r.task, c.tool)
		if err != nil {
			return nil, err
		}
		if v := taskfile.Violations(s, c.args); len(v) > 0 {
			return &callFailure{kind: events.RejectSchema, detail: strings.Join(v, "; "), extra: map[string]any{"violations": v}}, nil
		}
	}
	if r.comp.PermissionGate {
		res := c.raw
		if c.isJSON {
			res = c.args
		}
		if out := tasks.OutOfScope(r.inst.Scope, c.tool.Resources(res)); len(out) > 0 {
			return &callFailure{kind: events.RejectPermission, detail: fmt.Sprintf("outside the allowed scope: %s", strings.Join(out, ", "))}, nil
		}
	}
	return nil, nil
}

// reject records a call a gate refused (tool.rejected, with its arguments when they are small
// enough and the state it was made in) and answers it.
func (r *runner) reject(c *toolCall, f *callFailure) error {
	r.failReason = "rejected: " + cmp.Or(f.cause, f.kind)
	if err := r.emit(events.ToolRejected{CallID: c.id, Tool: toolName(c.sent), Reason: f.kind, Detail: f.detail, Args: c.args,
		State: c.state}); err != nil {
		return err
	}
	r.toolMsg(c.id, f.message())
	return nil
}

// execute runs a call the gates let through. Under free execution it first enters the state of
// the call's tool (accept or fail leaves it). It records tool.called, runs the tool and records
// tool.returned, which it returns with the tool's error: OK with the canonical JSON of the output, or not OK with the
// error when the tool failed or its output is not JSON (a failed return, not an error). err is
// an emit failure.
func (r *runner) execute(c *toolCall) (returned, error) {
	if !r.graph {
		if err := r.enter(c.st.Name, ""); err != nil {
			return returned{}, err
		}
	}
	var server events.ToolServer
	if c.tool.Origin != nil {
		c.key = idempotencyKey()
		server = toolServer(c.tool.Origin())
	}
	if err := r.emit(events.ToolCalled{CallID: c.id, Tool: c.tool.Name, Args: c.args, State: c.st.Name, Server: server}); err != nil {
		return returned{}, err
	}
	t0 := time.Now()
	out, xerr := r.exec(c)
	dur := time.Since(t0)
	var canonOut json.RawMessage
	if xerr == nil {
		canon, cerr := events.Canonical(out)
		if cerr != nil {
			xerr = fmt.Errorf("harness: tool output is not JSON: %w", cerr)
		} else {
			canonOut = canon
		}
	}
	ret := events.ToolReturned{CallID: c.id, Tool: c.tool.Name, OK: xerr == nil, Output: canonOut, DurationMS: ms(dur), Server: server}
	if xerr != nil {
		ret.Error = xerr.Error()
	}
	return returned{ret, xerr}, r.emit(ret)
}

// toolServer is the server of a tool's calls as events record it. A server that introduced
// itself by no name (or was never reached) is named by its key in the task file.
func toolServer(o tasks.Origin) events.ToolServer {
	return events.ToolServer{Name: cmp.Or(o.Name, o.Server), Version: o.Version, Key: o.Server, Transport: o.Transport}
}

// returned is a recorded tool.returned with the tool's error, whose kind (a tool server that
// is down, tasks.ErrToolUnavailable) the event's text does not keep.
type returned struct {
	events.ToolReturned
	err error
}

// accept decides whether an executed call made progress. Its output is not accepted when the
// tool failed, when (with validation) the state's validator finds problems, recorded as
// output.invalid, or when (under graph execution) it selects no successor; the call is then
// answered with the failure. An accepted output (output.validated with validation) goes back to
// the model, becomes the final output if it is the final tool's, and the run leaves the state:
// under graph execution to the successor it selects, or done at the terminal state.
func (r *runner) accept(c *toolCall, ret events.ToolReturned) (accepted bool, err error) {
	if !ret.OK {
		return false, r.fail(c, &callFailure{kind: "tool_error", detail: ret.Error})
	}
	st := c.st
	if r.comp.Validation {
		if probs := st.Validate(ret.Output); len(probs) > 0 {
			if err := r.emit(events.OutputInvalid{State: st.Name, Tool: c.tool.Name, Errors: probs}); err != nil {
				return false, err
			}
			return false, r.fail(c, &callFailure{kind: "output_invalid", detail: "the output failed validation",
				extra: map[string]any{"problems": probs}})
		}
		if err := r.emit(events.OutputValidated{State: st.Name, Tool: c.tool.Name}); err != nil {
			return false, err
		}
	}
	next := ""
	if r.graph && !st.Terminal() {
		n, rerr := st.Successor(ret.Output)
		if rerr != nil {
			return false, r.fail(c, &callFailure{kind: "route", detail: rerr.Error()})
		}
		next = n
	}
	// Built by hand: the output is canonical JSON already, and re-marshalling it would scan it again.
	r.msgs = append(r.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.id, Content: `{"ok":true,"output":` + string(ret.Output) + `}`})
	if c.tool.Name == r.task.FinalTool {
		r.final = ret.Output
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

// fail answers an executed call whose output was not accepted and, under free execution,
// leaves the state that execute entered, with the failure's kind as outcome.
func (r *runner) fail(c *toolCall, f *callFailure) error {
	r.failReason = f.kind
	r.toolMsg(c.id, f.message())
	if !r.graph {
		return r.exit(f.kind)
	}
	return nil
}

// callID is the id a call is recorded and answered under. Every call, answered or not, takes
// the next number, so that generated ids do not depend on which calls had one.
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

// exec runs a call's tool: each attempt bounded by the tool's timeout, and, while its server
// does not answer (tasks.ErrToolUnavailable), attempted again up to the tool's Retries times
// after a short backoff. Every attempt carries the call's idempotency key, so that the server
// can tell a retry from a new call. The last attempt's answer is the call's.
func (r *runner) exec(c *toolCall) (json.RawMessage, error) {
	ctx := r.ctx
	if c.key != "" {
		ctx = tasks.WithIdempotencyKey(ctx, c.key)
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.tool.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.tool.Timeout)
		}
		c.attempts++
		out, err := c.tool.Exec(actx, r.inst, c.raw)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && timedOut && !errors.Is(err, tasks.ErrToolUnavailable) {
			err = fmt.Errorf("%w: %s: no answer within %s: %w", tasks.ErrToolUnavailable, c.tool.Name, c.tool.Timeout, err)
		}
		if err == nil || !errors.Is(err, tasks.ErrToolUnavailable) || attempt >= c.tool.Retries || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(toolBackoff << attempt):
		}
	}
}

// toolBackoff is the wait before a tool call's first retry; it doubles at each further one.
const toolBackoff = 200 * time.Millisecond

// idempotencyKey is a new call's idempotency key: 128 random bits.
func idempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
