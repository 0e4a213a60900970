package otlpmap

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
)

// Note records a mapping decision about one span: a span kind not mapped, a missing attribute
// replaced by a default, a value digested because it was too large, a nesting flattened.
type Note struct {
	SpanID string `json:"span_id"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Result is one trace mapped to one run.
type Result struct {
	TraceID    string
	Study      string
	Run        string
	Task       string
	Model      string
	Condition  string
	Incomplete bool // the trace root never arrived; the run is recorded as aborted
	Events     []events.Envelope
	Notes      []Note
}

// Attribute keys read by the mapping, most specific first.
var (
	toolNameKeys   = []string{"gen_ai.tool.name", "tool.name", "traceloop.entity.name"}
	toolCallIDKeys = []string{"gen_ai.tool.call.id", "tool_call.id", "tool.call.id"}
	toolArgKeys    = []string{"gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input"}
	toolResultKeys = []string{"gen_ai.tool.call.result", "output.value", "traceloop.entity.output"}
	modelNameKeys  = []string{"gen_ai.request.model", "llm.request.model", "llm.model_name", "gen_ai.response.model", "llm.response.model"}
	inTokenKeys    = []string{"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens"}
	outTokenKeys   = []string{"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion", "llm.usage.completion_tokens"}
	finishKeys     = []string{"gen_ai.response.finish_reasons", "llm.response.finish_reason", "gen_ai.response.finish_reason"}
	fingerKeys     = []string{"gen_ai.openai.response.system_fingerprint", "openai.response.system_fingerprint", "gen_ai.response.system_fingerprint", "gen_ai.openai.system_fingerprint"}
	seedKeys       = []string{"gen_ai.request.seed", "openai.request.seed", "gen_ai.openai.request.seed", "llm.request.seed"}
	planTextKeys   = []string{"ditto.plan", "gen_ai.output.messages", "output.value", "traceloop.entity.output"}
	outputKeys     = []string{"ditto.output", "gen_ai.output.messages", "output.value", "traceloop.entity.output"}
	stateNameKeys  = []string{"ditto.state", "gen_ai.agent.name", "traceloop.entity.name", "agent.name"}
	// inputKeyKeys name the input a run processed, set by the client; without one the key is
	// derived from the run's input (inputKeys on the agent span).
	inputKeyKeys = []string{"ditto.input_key", "ditto.input.key"}
	inputKeys    = []string{"ditto.input", "input.value", "traceloop.entity.input", "gen_ai.input.messages"}
)

const maxName = 256 // bytes kept of a name (task, model, tool, state)

// MapTrace maps the spans of one trace to the events of one run. complete says whether the
// trace's root span arrived; an incomplete trace is recorded as an aborted run. Spans of other
// traces, duplicate span ids and spans whose parent is missing are handled and noted. The events
// returned always fold with events.Fold. It fails only for an empty trace, a trace with no
// span of a known GenAI kind (ErrNoGenAI) or an unsafe study name.
func MapTrace(spans []Span, cfg Config, complete bool) (*Result, error) {
	if len(spans) == 0 {
		return nil, ErrEmpty
	}
	cfg = cfg.WithDefaults()
	m := &mapper{cfg: cfg, res: &Result{TraceID: spans[0].TraceID, Incomplete: !complete}}
	if err := m.index(spans); err != nil {
		return nil, err
	}
	if err := m.cell(); err != nil {
		return nil, err
	}
	m.start()
	for _, s := range m.tops {
		m.walk(s)
	}
	for _, s := range m.spans {
		if !m.visited[s.SpanID] {
			m.note(s, "unreachable: its parent chain loops; not mapped")
		}
	}
	m.finish()
	// The events are built to be valid; checking costs little and turns a mapping bug into an
	// error instead of a poison message.
	for i := range m.res.Events {
		if err := m.res.Events[i].Validate(); err != nil {
			return nil, fmt.Errorf("otlpmap: mapped event %d (%s) is invalid: %w", i, m.res.Events[i].Type, err)
		}
	}
	return m.res, nil
}

type mapper struct {
	cfg      Config
	res      *Result
	spans    []*Span // sorted by start, end, span id
	kinds    map[string]Kind
	children map[string][]*Span
	tops     []*Span // roots and orphans, in start order
	root     *Span   // the run's root: the outermost agent span, else the first top span
	visited  map[string]bool
	source   events.Source
	seq      int64
	t0, tEnd time.Time

	stateDepth int
	lastState  string
	planDepth  int
	plans      int
	callIDs    map[string]bool
	called     map[string]events.ToolCalled // by span id, between tool.called and tool.returned
	totals     events.Totals
}

func (m *mapper) note(s *Span, format string, args ...any) {
	m.res.Notes = append(m.res.Notes, Note{SpanID: s.SpanID, Name: s.Name, Reason: fmt.Sprintf(format, args...)})
}

func (m *mapper) index(in []Span) error {
	trace := in[0].TraceID
	seen := make(map[string]bool, len(in))
	for i := range in {
		s := &in[i]
		switch {
		case s.TraceID != trace:
			m.note(s, "span of trace %s in the batch of trace %s; not mapped", s.TraceID, trace)
			continue
		case seen[s.SpanID]:
			continue // the same span exported twice
		}
		seen[s.SpanID] = true
		m.spans = append(m.spans, s)
	}
	slices.SortStableFunc(m.spans, func(a, b *Span) int {
		return cmp.Or(a.Start.Compare(b.Start), a.End.Compare(b.End), strings.Compare(a.SpanID, b.SpanID))
	})
	m.kinds = make(map[string]Kind, len(m.spans))
	m.children = map[string][]*Span{}
	m.visited = make(map[string]bool, len(m.spans))
	m.callIDs = map[string]bool{}
	m.called = map[string]events.ToolCalled{}
	genai := false
	for _, s := range m.spans {
		k, why := Classify(s)
		m.kinds[s.SpanID] = k
		if k == KindOther {
			m.note(s, "%s; walked through, no event", why)
		} else {
			genai = true
		}
		switch {
		case s.ParentID == "":
			m.tops = append(m.tops, s)
		case !seen[s.ParentID]:
			if !s.RemoteParent {
				m.note(s, "parent span %s not received; treated as top level", s.ParentID)
			}
			m.tops = append(m.tops, s)
		default:
			m.children[s.ParentID] = append(m.children[s.ParentID], s)
		}
	}
	if !genai {
		return fmt.Errorf("%w: %d span(s), none of a mapped kind", ErrNoGenAI, len(m.spans))
	}
	m.root = m.findAgent()
	if m.root == nil {
		if len(m.tops) > 0 {
			m.root = m.tops[0]
		} else {
			m.root = m.spans[0]
		}
		// A top-level chain or task (LangChain's outer CHAIN, say) is the workflow itself.
		if m.kinds[m.root.SpanID] == KindStep {
			m.kinds[m.root.SpanID] = KindAgent
		}
	}
	m.t0, m.tEnd = m.root.Start, m.root.End
	for _, s := range m.spans {
		if s.End.After(m.tEnd) {
			m.tEnd = s.End
		}
	}
	if m.kinds[m.root.SpanID] != KindAgent {
		m.t0 = m.spans[0].Start
	}
	return nil
}

// findAgent returns the first agent span in depth-first order from the tops: the outermost
// and earliest one.
func (m *mapper) findAgent() *Span {
	seen := map[string]bool{}
	var find func(s *Span) *Span
	find = func(s *Span) *Span {
		if seen[s.SpanID] {
			return nil
		}
		seen[s.SpanID] = true
		if m.kinds[s.SpanID] == KindAgent {
			return s
		}
		for _, c := range m.children[s.SpanID] {
			if a := find(c); a != nil {
				return a
			}
		}
		return nil
	}
	for _, s := range m.tops {
		if a := find(s); a != nil {
			return a
		}
	}
	return nil
}

// lookup reads keys from the root span, then its resource.
func (m *mapper) lookup(keys []string) (string, bool) {
	if v, ok := m.root.Attrs.Str(keys...); ok {
		return v, true
	}
	return m.root.Resource.Str(keys...)
}

func (m *mapper) cell() error {
	r := m.res
	study := m.root.Study
	for _, s := range m.spans {
		if study != "" {
			break
		}
		study = s.Study
	}
	if err := events.ValidateToken("study", study); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafeName, err)
	}
	r.Study = study
	r.Run = r.TraceID
	if label := m.cfg.Bucket.Label(m.t0); label != "" {
		r.Run = label + "-" + r.TraceID
	}
	if v, ok := m.root.Attrs.Str(m.cfg.TaskKeys...); ok {
		r.Task = v
	} else if name := agentName(m.root); name != "" && m.kinds[m.root.SpanID] == KindAgent {
		// An agent or chain span names the agent (OpenInference and many frameworks set no
		// agent attribute): that is the task, not the service that ran it.
		r.Task = name
		m.note(m.root, "no task attribute on the agent span (%s); task from the span name", strings.Join(m.cfg.TaskKeys, ", "))
	} else if v, ok := m.root.Resource.Str(m.cfg.TaskKeys...); ok {
		r.Task = v
	} else if m.root.Name != "" {
		r.Task = m.root.Name
		m.note(m.root, "no task attribute (%s); task from the span name", strings.Join(m.cfg.TaskKeys, ", "))
	} else {
		r.Task = "unknown"
		m.note(m.root, "no task attribute and no span name; task \"unknown\"")
	}
	if v, ok := m.lookup(m.cfg.ModelKeys); ok {
		r.Model = v
	} else {
		for _, s := range m.spans {
			if m.kinds[s.SpanID] == KindInference {
				if v, ok := s.Attrs.Str(modelNameKeys...); ok {
					r.Model = v
					break
				}
			}
		}
		if r.Model == "" {
			r.Model = "unknown"
			m.note(m.root, "no model attribute on the run or any inference span; model \"unknown\"")
		}
	}
	if v, ok := m.lookup(m.cfg.ConditionKeys); ok {
		r.Condition = v
	} else {
		r.Condition = m.cfg.DefaultCondition
	}
	if m.cfg.BucketCondition {
		if label := m.cfg.Bucket.Label(m.t0); label != "" {
			r.Condition += "@" + label
		}
	}
	r.Task, r.Model, r.Condition = clip(r.Task, maxName), clip(r.Model, maxName), clip(r.Condition, maxName)
	src, ok := m.root.Resource.Str("service.name")
	if !ok {
		src = r.Task
	}
	m.source = events.Source{Kind: events.SourceProduction, ID: clip(src, 128)}
	return nil
}

// agentName is an agent span's name without the GenAI operation ("invoke_agent triage" →
// "triage").
func agentName(s *Span) string {
	name := strings.TrimSpace(s.Name)
	for _, op := range []string{"invoke_agent ", "invoke_workflow "} {
		if rest, ok := strings.CutPrefix(name, op); ok && strings.TrimSpace(rest) != "" {
			return strings.TrimSpace(rest)
		}
	}
	return name
}

func (m *mapper) emit(t time.Time, s *Span, role string, p events.Payload) {
	m.seq++
	m.res.Events = append(m.res.Events, events.Envelope{
		Schema: events.SchemaVersion, ID: events.DerivedID(t, m.res.TraceID, s.SpanID, role), Type: p.EventType(),
		Time: t.UTC(), Study: m.res.Study, Run: m.res.Run, Attempt: 1, Seq: m.seq, Source: m.source,
		TraceID: m.res.TraceID, SpanID: s.SpanID, Payload: p,
	})
}

func (m *mapper) start() {
	p := events.RunStarted{
		Task: m.res.Task, Model: m.res.Model, Condition: m.res.Condition, Components: []string{},
		Endpoint: "production",
	}
	if v, ok := m.lookup([]string{"ditto.instance", "gen_ai.conversation.id", "session.id"}); ok {
		p.Instance = clip(v, maxName)
	}
	if seed, ok := m.root.Attrs.Int(seedKeys...); ok {
		p.Seed = &seed
	}
	if v, ok := m.root.Attrs.Str("server.address"); ok {
		p.Endpoint = clip(v, maxName)
	}
	p.InputKey = m.inputKey()
	m.emit(m.t0, m.root, "run.started", p)
}

// inputKey is the run's input key: the client's (ditto.input_key on the agent span or its
// resource, at most 256 bytes), else the hash of the agent span's input (events.InputKeyOf of
// its canonical JSON; a text input is hashed as a JSON string), else "" (a run compared with
// no other).
func (m *mapper) inputKey() string {
	if v, ok := m.lookup(inputKeyKeys); ok && strings.TrimSpace(v) != "" {
		return clip(strings.TrimSpace(v), maxName)
	}
	var raw []byte
	if v, ok := jsonAttr(m.root.Attrs, inputKeys...); ok {
		raw, _ = json.Marshal(v)
	} else if s, ok := m.root.Attrs.Str(inputKeys...); ok && s != "" {
		raw, _ = json.Marshal(s)
	}
	if raw == nil {
		return ""
	}
	k, err := events.InputKeyOf(raw)
	if err != nil {
		return ""
	}
	return k
}

func (m *mapper) walk(s *Span) {
	if m.visited[s.SpanID] {
		return
	}
	m.visited[s.SpanID] = true
	kind := m.kinds[s.SpanID]
	if kind == KindAgent && s != m.root {
		kind = KindStep // a nested agent is a state of the run
	}
	entered := false
	switch kind {
	case KindStep:
		state := clip(firstStr(s, stateNameKeys, s.Name), maxName)
		if state == "" {
			state = "step"
		}
		if m.stateDepth == 0 {
			m.emit(s.Start, s, "state.entered", events.StateEntered{State: state, From: m.lastState})
			m.lastState, entered = state, true
		} else {
			m.note(s, "step %q nested in state %q: flattened into it (ditto states do not nest)", state, m.lastState)
		}
		m.stateDepth++
	case KindTool:
		m.toolCalled(s)
	case KindPlan:
		m.planDepth++
	}
	for _, c := range m.children[s.SpanID] {
		m.walk(c)
	}
	switch kind {
	case KindStep:
		m.stateDepth--
		if entered {
			outcome := "ok"
			if s.Status == StatusError {
				outcome = "error"
			}
			m.emit(s.End, s, "state.exited", events.StateExited{State: m.lastState, Outcome: outcome})
		}
	case KindTool:
		m.toolReturned(s)
	case KindInference:
		m.modelCalled(s)
	case KindPlan:
		m.planDepth--
		m.planProposed(s)
	}
}

func (m *mapper) toolName(s *Span) string {
	if v, ok := s.Attrs.Str(toolNameKeys...); ok {
		return clip(v, maxName)
	}
	if rest, ok := strings.CutPrefix(s.Name, "execute_tool "); ok && rest != "" {
		return clip(rest, maxName)
	}
	if s.Name == "" || s.Name == "execute_tool" {
		m.note(s, "no tool name attribute or span name; tool \"unknown\"")
		return "unknown"
	}
	m.note(s, "no tool name attribute; tool named after the span")
	return clip(s.Name, maxName)
}

func (m *mapper) callID(s *Span) string {
	id, ok := s.Attrs.Str(toolCallIDKeys...)
	id = clip(id, maxName)
	if !ok || m.callIDs[id] {
		if ok {
			m.note(s, "tool call id %q already used in this run; the span id is the call id", id)
		}
		id = s.SpanID
		if m.callIDs[id] {
			id = s.SpanID + "-" + s.SpanID
		}
	}
	m.callIDs[id] = true
	return id
}

func (m *mapper) toolCalled(s *Span) {
	args, ok := m.value(s, toolArgKeys)
	if !ok {
		args = json.RawMessage("null")
		m.note(s, "no tool arguments attribute; arguments recorded as null")
	}
	p := events.ToolCalled{CallID: m.callID(s), Tool: m.toolName(s), Args: args}
	if m.stateDepth > 0 {
		p.State = m.lastState
	}
	m.totals.ToolCalls++
	m.called[s.SpanID] = p
	m.emit(s.Start, s, "tool.called", p)
}

func (m *mapper) toolReturned(s *Span) {
	called := m.called[s.SpanID]
	delete(m.called, s.SpanID)
	p := events.ToolReturned{CallID: called.CallID, Tool: called.Tool, OK: s.Status != StatusError,
		DurationMS: ms(s.End.Sub(s.Start))}
	if p.OK {
		out, ok := m.value(s, toolResultKeys)
		if !ok {
			out = json.RawMessage("null")
			m.note(s, "no tool result attribute; output recorded as null")
		}
		p.Output = out
	} else {
		p.Error = errorMessage(s)
	}
	m.emit(s.End, s, "tool.returned", p)
}

func (m *mapper) modelCalled(s *Span) {
	p := events.ModelCalled{Purpose: "act", LatencyMS: ms(s.End.Sub(s.Start))}
	if m.planDepth > 0 {
		p.Purpose = "plan"
	}
	if v, ok := s.Attrs.Str(modelNameKeys...); ok {
		p.Model = clip(v, maxName)
	} else {
		p.Model = m.res.Model
		m.note(s, "inference span without a model attribute; the run's model %q assumed", m.res.Model)
	}
	in, okIn := s.Attrs.Int(inTokenKeys...)
	out, okOut := s.Attrs.Int(outTokenKeys...)
	if !okIn || !okOut {
		m.note(s, "inference span without token counts (%v input, %v output); missing counts are 0", okIn, okOut)
	}
	p.PromptTokens, p.CompletionTokens = max(in, 0), max(out, 0)
	d := details(s)
	if len(d.finish) > 0 {
		p.FinishReason = clip(strings.Join(d.finish, ","), maxName)
	}
	p.Fingerprint = clip(d.fingerprint, maxName)
	p.Seed = d.seed
	p.ResponseModel = clip(d.responseModel, maxName)
	p.Temperature, p.TopP = d.temperature, d.topP
	for _, id := range d.toolCallIDs {
		p.ToolCallIDs = append(p.ToolCallIDs, clip(id, maxName))
	}
	p.Input = m.messages(s, d.input)
	p.Output = m.messages(s, d.output)
	if s.Status == StatusError {
		p.Error = errorMessage(s)
	}
	m.totals.ModelCalls++
	m.totals.PromptTokens += p.PromptTokens
	m.totals.CompletionTokens += p.CompletionTokens
	m.emit(s.End, s, "model.called", p)
}

// messages stores recorded messages as canonical JSON, digested past MaxValueBytes.
func (m *mapper) messages(s *Span, v any) json.RawMessage {
	if v == nil {
		return nil
	}
	c, err := events.CanonicalValue(v)
	if err != nil {
		m.note(s, "messages not representable as JSON (%v); not recorded", err)
		return nil
	}
	if len(c) > m.cfg.MaxValueBytes {
		sum := sha256.Sum256(c)
		m.note(s, "messages of %d bytes replaced by their digest", len(c))
		c = events.MustCanonical(map[string]any{"bytes": len(c), "sha256": hex.EncodeToString(sum[:]), "truncated": true})
	}
	return c
}

func (m *mapper) planProposed(s *Span) {
	m.plans++
	p := events.PlanProposed{Attempt: m.plans}
	if raw, ok := s.Attrs.Raw(planTextKeys...); ok {
		if str, isStr := raw.(string); isStr {
			p.Text = str
		} else if c, err := events.CanonicalValue(raw); err == nil {
			p.Text = string(c)
		}
	}
	if p.Text == "" {
		m.note(s, "plan span without plan text (%s); recorded empty", strings.Join(planTextKeys, ", "))
	}
	if len(p.Text) > m.cfg.MaxValueBytes {
		sum := sha256.Sum256([]byte(p.Text))
		m.note(s, "plan text of %d bytes replaced by its digest", len(p.Text))
		p.Text = "sha256:" + hex.EncodeToString(sum[:])
	}
	p.Text = strings.ToValidUTF8(p.Text, "\uFFFD")
	m.emit(s.End, s, "plan.proposed", p)
}

func (m *mapper) finish() {
	r := m.root
	p := events.RunFinished{Status: events.StatusSucceeded}
	switch {
	case m.res.Incomplete:
		p.Status = events.StatusAborted
		p.Error = "incomplete trace: the root span was not received before the trace was flushed"
	case r.Status == StatusError:
		p.Status, p.Error = events.StatusFailed, errorMessage(r)
	}
	if v, ok := r.Attrs.Str("ditto.status"); ok && !m.res.Incomplete {
		switch v {
		case events.StatusSucceeded, events.StatusFailed, events.StatusEscalated, events.StatusAborted:
			p.Status = v
		default:
			m.note(r, "ditto.status %q is not a run status; ignored", v)
		}
	}
	p.Success = p.Status == events.StatusSucceeded
	if ok, set := r.Attrs.Bool("ditto.success"); set && p.Success {
		p.Success = ok
	}
	if p.Status != events.StatusSucceeded && p.Error == "" {
		p.Error = p.Status
	}
	if m.kinds[r.SpanID] == KindAgent {
		if out, ok := m.value(r, outputKeys); ok {
			p.Output = out
		}
	}
	m.totals.LatencyMS = ms(m.tEnd.Sub(m.t0))
	if m.kinds[r.SpanID] == KindAgent && !m.res.Incomplete {
		m.totals.LatencyMS = ms(r.End.Sub(r.Start))
	}
	p.Totals = m.totals
	m.emit(m.tEnd, r, "run.finished", p)
}

// value reads a recorded value (arguments, result, output) as canonical JSON. A string that
// holds JSON is that JSON (frameworks serialise arguments into one string attribute); any other
// string is a JSON string. A value over Config.MaxValueBytes is replaced by its digest.
func (m *mapper) value(s *Span, keys []string) (json.RawMessage, bool) {
	raw, ok := s.Attrs.Raw(keys...)
	if !ok {
		return nil, false
	}
	var c json.RawMessage
	switch v := raw.(type) {
	case string:
		v = strings.ToValidUTF8(v, "\uFFFD")
		if t := strings.TrimSpace(v); t != "" && json.Valid([]byte(t)) {
			if cj, err := events.Canonical([]byte(t)); err == nil {
				c = cj
			}
		}
		if c == nil {
			c, _ = events.CanonicalValue(v)
		}
	case []byte:
		c, _ = events.CanonicalValue(base64.StdEncoding.EncodeToString(v))
	default:
		cj, err := events.CanonicalValue(v)
		if err != nil {
			cj, _ = events.CanonicalValue(strings.ToValidUTF8(fmt.Sprint(v), "\uFFFD"))
		}
		c = cj
	}
	if c == nil {
		return nil, false
	}
	if len(c) > m.cfg.MaxValueBytes {
		sum := sha256.Sum256(c)
		m.note(s, "value of %d bytes replaced by its digest", len(c))
		c = events.MustCanonical(map[string]any{"bytes": len(c), "sha256": hex.EncodeToString(sum[:]), "truncated": true})
	}
	return c, true
}

func firstStr(s *Span, keys []string, fallback string) string {
	if v, ok := s.Attrs.Str(keys...); ok {
		return v
	}
	return fallback
}

// errorMessage is the span's status message, else its exception's message or type, else
// error.type, else "error".
func errorMessage(s *Span) string {
	msg := s.StatusMessage
	if msg == "" {
		for _, ev := range s.Events {
			typ, _ := ev.Attrs.Str("exception.type")
			text, _ := ev.Attrs.Str("exception.message")
			switch {
			case typ != "" && text != "":
				msg = typ + ": " + text
			case text != "":
				msg = text
			default:
				msg = typ
			}
			if msg != "" {
				break
			}
		}
	}
	if msg == "" {
		msg, _ = s.Attrs.Str("error.type")
	}
	if msg == "" {
		msg = "error"
	}
	return clip(strings.ToValidUTF8(msg, "\uFFFD"), 4096)
}

func ms(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000
}

// clip cuts s to at most n bytes on a rune boundary and makes it valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
