package contextmgr

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/llm"
)

// Summarizer writes the running summary (M3). Implementations must not retain folded.
type Summarizer interface {
	// Summarize returns a summary of prior (the previous summary, "" for the first) followed
	// by the folded messages, in at most maxTokens tokens.
	Summarize(ctx context.Context, prior string, folded []llm.Message, maxTokens int) (Summary, error)
}

// Summary is one summarization call's result.
type Summary struct {
	Text    string
	Usage   llm.Usage
	Model   string // as the endpoint reported it
	Latency time.Duration
}

// Summarization is what one summarization did: the ids of the entries folded, the history's
// tokens before and after, the new summary's tokens, and the call.
type Summarization struct {
	Folded        []string
	Steps         int
	Before, After int
	SummaryTokens int
	Call          Summary
}

// ModelSummarizer asks a model for the summary, with its own request (evented by the caller as
// a model call of its own).
type ModelSummarizer struct {
	Model llm.Model
	// Name is the model to ask ("" for the client's default).
	Name string
}

// SummaryInstruction is the system prompt of a summarization request.
const SummaryInstruction = "You maintain the running summary of an agent's work on a task. " +
	"Rewrite the summary so that it keeps every fact the agent still needs: what it was asked, what it has done, " +
	"what it found (file names, line numbers, error messages, values), what failed and what remains to do. " +
	"Answer with the summary only."

// Summarize sends one chat request: the instruction, then the prior summary and the folded
// messages as a transcript.
func (s ModelSummarizer) Summarize(ctx context.Context, prior string, folded []llm.Message, maxTokens int) (Summary, error) {
	resp, err := s.Model.Chat(ctx, SummaryRequest(s.Name, prior, folded, maxTokens))
	if err != nil {
		return Summary{}, fmt.Errorf("contextmgr: summarization: %w", err)
	}
	if strings.TrimSpace(resp.Content) == "" {
		return Summary{}, fmt.Errorf("contextmgr: summarization: the model returned no text (finish reason %q)", resp.FinishReason)
	}
	return Summary{Text: resp.Content, Usage: resp.Usage, Model: resp.Model, Latency: resp.Latency}, nil
}

// SummaryRequest is the request a ModelSummarizer sends.
func SummaryRequest(model, prior string, folded []llm.Message, maxTokens int) llm.Request {
	var b strings.Builder
	if prior != "" {
		b.WriteString("Summary so far:\n")
		b.WriteString(prior)
		b.WriteString("\n\n")
	}
	b.WriteString("Messages to fold into it:\n")
	for _, m := range folded {
		fmt.Fprintf(&b, "[%s]", m.Role)
		if m.Content != "" {
			b.WriteString(" ")
			b.WriteString(m.Content)
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, " call %s(%s)", tc.Name, tc.Arguments)
		}
		b.WriteString("\n")
	}
	return llm.Request{
		Model: model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SummaryInstruction},
			{Role: llm.RoleUser, Content: b.String()},
		},
		MaxTokens: maxTokens,
	}
}

// summaryFraming opens the summary message sent after the preamble.
func summaryFraming(steps int) string {
	return fmt.Sprintf("Summary of the first %d steps of this run (their messages were folded into it):\n", steps)
}

// fold summarizes the first k middle steps into the running summary.
func (h *History) fold(ctx context.Context, s Summarizer, k int, maxTokens int) (Summarization, error) {
	steps := h.steps()
	end := steps[k-1].end
	folded := make([]llm.Message, 0, end)
	ids := make([]string, 0, end)
	for _, e := range h.entries[:end] {
		folded = append(folded, e.Message)
		ids = append(ids, e.ID)
	}
	prior, _ := h.Summary()
	if h.summary != nil {
		prior = strings.TrimPrefix(prior, summaryFraming(h.folded))
	}
	before := h.Tokens()
	call, err := s.Summarize(ctx, prior, folded, maxTokens)
	if err != nil {
		return Summarization{}, err
	}
	h.folded += k
	m := llm.Message{Role: llm.RoleUser, Content: summaryFraming(h.folded) + call.Text}
	h.summary = &Entry{ID: fmt.Sprintf("summary-%d", h.folded), Message: m, Tokens: MessageTokens(h.counter, m)}
	h.entries = append([]Entry(nil), h.entries[end:]...)
	return Summarization{
		Folded:        ids,
		Steps:         k,
		Before:        before,
		After:         h.Tokens(),
		SummaryTokens: h.summary.Tokens,
		Call:          call,
	}, nil
}
