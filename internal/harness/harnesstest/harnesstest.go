// Package harnesstest provides test doubles for code that runs the harness: a Recorder
// emitter that keeps every event and can fold them, a Script model that answers from a list of
// turns, and an Ideal model that does each task perfectly (tasks.Task.Ideal) at zero latency.
// They are test doubles of ditto's own interfaces, never of NATS or DuckDB.
package harnesstest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// Recorder is a harness.Emitter that wraps every payload in an envelope (through a
// harness.Sequencer), encodes it with events.Encode (which validates it, so an invalid event
// fails the Emit as it would in a worker) and keeps both. Safe for one run at a time.
type Recorder struct {
	mu        sync.Mutex
	Envelopes []events.Envelope
	Encoded   [][]byte
	seq       *harness.Sequencer
	// Fail, when set, is returned by Emit for the event of that type (to test emit failures).
	Fail events.Type
}

// NewRecorder returns an empty Recorder for study "test", run "r1", attempt 1.
func NewRecorder() *Recorder {
	r := &Recorder{}
	r.seq = &harness.Sequencer{Study: "test", Run: "r1", Attempt: 1,
		Source: events.Source{Kind: events.SourceHarness, ID: "harnesstest"},
		Publish: func(_ context.Context, e *events.Envelope) error {
			b, err := events.Encode(e)
			if err != nil {
				return err
			}
			r.Envelopes, r.Encoded = append(r.Envelopes, *e), append(r.Encoded, b)
			return nil
		}}
	return r
}

// Emit implements harness.Emitter.
func (r *Recorder) Emit(ctx context.Context, p events.Payload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Fail != "" && p.EventType() == r.Fail {
		return fmt.Errorf("harnesstest: scripted emit failure on %s", p.EventType())
	}
	return r.seq.Emit(ctx, p)
}

// Types returns the event types in order.
func (r *Recorder) Types() []events.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]events.Type, len(r.Envelopes))
	for i, e := range r.Envelopes {
		out[i] = e.Type
	}
	return out
}

// Payloads returns the payloads of the given type, in order.
func (r *Recorder) Payloads(t events.Type) []events.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Payload
	for _, e := range r.Envelopes {
		if e.Type == t {
			out = append(out, e.Payload)
		}
	}
	return out
}

// Count returns how many events of type t were emitted.
func (r *Recorder) Count(t events.Type) int { return len(r.Payloads(t)) }

// Fold decodes the encoded events and folds them with events.Fold, so that what is folded is
// what a consumer would read.
func (r *Recorder) Fold() (*events.Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hist := make([]events.Envelope, 0, len(r.Encoded))
	for _, b := range r.Encoded {
		d, err := events.Decode(b)
		if err != nil {
			return nil, err
		}
		hist = append(hist, d)
	}
	return events.Fold(hist)
}

// Turn produces one model response from the request.
type Turn func(req llm.Request) (llm.Response, error)

// Script is a Model answering the i-th request with Turns[i] (Then after the last one).
type Script struct {
	mu       sync.Mutex
	Turns    []Turn
	Then     Turn // nil: an error once the turns are used up
	Requests []llm.Request
}

// Chat implements llm.Model. It keeps a copy of each request.
func (s *Script) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	i := len(s.Requests)
	req.Messages = slices.Clone(req.Messages)
	s.Requests = append(s.Requests, req)
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return llm.Response{}, &llm.CallError{Attempts: 1, Err: err}
	}
	turn := s.Then
	if i < len(s.Turns) {
		turn = s.Turns[i]
	}
	if turn == nil {
		return llm.Response{}, &llm.CallError{Attempts: 1, Err: fmt.Errorf("harnesstest: script exhausted at request %d", i+1)}
	}
	resp, err := turn(req)
	if resp.Usage == (llm.Usage{}) {
		resp.Usage = usage(req)
	}
	return resp, err
}

// Calls returns the number of requests received.
func (s *Script) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
}

// Text answers with content only.
func Text(content string) Turn {
	return func(llm.Request) (llm.Response, error) {
		return llm.Response{Content: content, FinishReason: "stop"}, nil
	}
}

// Call answers with one tool call.
func Call(tool, args string) Turn {
	return func(req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", len(req.Messages)), Name: tool, Arguments: args}},
			FinishReason: "tool_calls"}, nil
	}
}

// Fail answers with an error.
func Fail(err error) Turn {
	return func(llm.Request) (llm.Response, error) { return llm.Response{}, &llm.CallError{Attempts: 1, Err: err} }
}

// usage is a deterministic token count: a quarter of the characters sent, ten completion tokens.
func usage(req llm.Request) llm.Usage {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.ToolCalls)*40
	}
	return llm.Usage{PromptTokens: n/4 + 1, CompletionTokens: 10}
}

// Ideal returns a Turn that does the task perfectly: the ideal plan when asked for one
// (structured when the request has a response format), else Task.Ideal's next tool call, or a
// closing text once the final tool has returned.
func Ideal(task *tasks.Task) Turn {
	return func(req llm.Request) (llm.Response, error) {
		if req.ResponseFormat != nil {
			return llm.Response{Content: IdealPlan(task), FinishReason: "stop"}, nil
		}
		if len(req.Tools) == 0 {
			return llm.Response{Content: "Load the data, validate it, compute, then report.", FinishReason: "stop"}, nil
		}
		prompt, results := Conversation(req.Messages)
		tool, args, done := task.Ideal(prompt, results)
		if done {
			return llm.Response{Content: "Done.", FinishReason: "stop"}, nil
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", len(req.Messages)), Name: tool, Arguments: string(args)}},
			FinishReason: "tool_calls"}, nil
	}
}

// IdealModel is a Script that always answers like Ideal.
func IdealModel(task *tasks.Task) *Script { return &Script{Then: Ideal(task)} }

// IdealPlan is a valid structured plan: the path that always takes the first successor.
func IdealPlan(task *tasks.Task) string {
	type step struct {
		State string `json:"state"`
		Tool  string `json:"intended_tool"`
	}
	var plan []step
	s, _ := task.StateByName(task.Start)
	for {
		plan = append(plan, step{s.Name, s.Tool})
		if s.Terminal() {
			break
		}
		s, _ = task.StateByName(s.Next[0])
	}
	b, _ := json.Marshal(plan)
	return string(b)
}

// Conversation extracts what tasks.Task.Ideal needs from a conversation: the instance prompt
// (the first user message) and the tool results in order, reading the harness's tool-message
// format ({"ok":true,"output":…} or {"ok":false,"error":…}).
func Conversation(msgs []llm.Message) (string, []tasks.ToolResult) {
	prompt := ""
	calls := map[string]llm.ToolCall{}
	var results []tasks.ToolResult
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			if prompt == "" {
				prompt = m.Content
			}
		case llm.RoleAssistant:
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = tc
			}
		case llm.RoleTool:
			tc := calls[m.ToolCallID]
			var body struct {
				OK     bool            `json:"ok"`
				Output json.RawMessage `json:"output"`
				Error  string          `json:"error"`
				Detail string          `json:"detail"`
			}
			_ = json.Unmarshal([]byte(m.Content), &body)
			r := tasks.ToolResult{Tool: tc.Name, Args: json.RawMessage(tc.Arguments)}
			if body.OK {
				r.Output = body.Output
			} else {
				r.Err = strings.TrimSpace(body.Error + ": " + body.Detail)
			}
			results = append(results, r)
		}
	}
	return prompt, results
}
