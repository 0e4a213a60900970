package contextmgr

import (
	"fmt"

	"github.com/dittolab/ditto/internal/llm"
)

// Entry is one message of a History with what the mechanisms need to know about it.
type Entry struct {
	// ID names the entry for the run's events and for recall_event; unique within a History.
	ID      string
	Message llm.Message
	// Tool is the tool whose result a tool message carries ("" for other roles).
	Tool string
	// Tokens is what Message costs in a request (MessageTokens), kept current by the History.
	Tokens int
	// Elided is set when Message.Content is a stub and the body was taken out (M1), or the body
	// was cut to fit (its head and tail kept around a marker).
	Elided bool
	// Original is the token count of the body before elision or a cut.
	Original int
	// full is the body of an observation cut to fit (Elided set, head and tail kept), from
	// which it can be cut again or replaced by a stub; "" otherwise.
	full string
}

// History is the conversation of one run. It is not safe for concurrent use: one run owns it.
type History struct {
	counter  Counter
	preamble []Entry
	summary  *Entry // the running summary (M3), sent right after the preamble
	entries  []Entry
	ids      map[string]bool
	// stubbed holds the ids of the tool-call arguments replaced by stubs (ArgumentID).
	stubbed map[string]bool
	// folded counts the steps summarized so far, for the summary's framing.
	folded int
}

// NewHistory returns a History whose preamble is the given messages (the system prompt and the
// task), with ids "p0", "p1", …. The preamble is always sent verbatim.
func NewHistory(c Counter, preamble ...llm.Message) *History {
	h := &History{counter: c, ids: map[string]bool{}, stubbed: map[string]bool{}}
	for i, m := range preamble {
		id := fmt.Sprintf("p%d", i)
		h.ids[id] = true
		h.preamble = append(h.preamble, Entry{ID: id, Message: m, Tokens: MessageTokens(c, m)})
	}
	return h
}

// Add appends a message. id must be new to the history (the run's event or call id fits);
// tool is the producing tool for a tool message. A tool message must answer a call of the last
// assistant message of the history.
func (h *History) Add(id string, m llm.Message, tool string) error {
	if id == "" || h.ids[id] {
		return fmt.Errorf("%w: %q", ErrDuplicateID, id)
	}
	if m.Role == llm.RoleTool && !h.answers(m.ToolCallID) {
		return fmt.Errorf("%w: %q answers no call of the last assistant message", ErrOrphanToolMessage, m.ToolCallID)
	}
	h.ids[id] = true
	h.entries = append(h.entries, Entry{ID: id, Message: m, Tool: tool, Tokens: MessageTokens(h.counter, m)})
	return nil
}

// answers reports whether callID is a call of the assistant message that starts the last step.
func (h *History) answers(callID string) bool {
	steps := h.steps()
	if len(steps) == 0 {
		return false
	}
	first := h.entries[steps[len(steps)-1].start]
	if first.Message.Role != llm.RoleAssistant {
		return false
	}
	for _, tc := range first.Message.ToolCalls {
		if tc.ID == callID {
			return true
		}
	}
	return false
}

// span is one step: entries[start:end].
type span struct{ start, end int }

// steps splits the entries into steps: each assistant or user (or system) message starts one;
// tool messages join the step before them.
func (h *History) steps() []span {
	var out []span
	for i, e := range h.entries {
		if e.Message.Role != llm.RoleTool || len(out) == 0 {
			out = append(out, span{i, i + 1})
			continue
		}
		out[len(out)-1].end = i + 1
	}
	return out
}

// Steps returns the number of steps after the preamble (the summary excluded).
func (h *History) Steps() int { return len(h.steps()) }

// Tokens returns what the history costs in a request: preamble, summary and entries.
func (h *History) Tokens() int {
	n := 0
	for _, e := range h.preamble {
		n += e.Tokens
	}
	if h.summary != nil {
		n += h.summary.Tokens
	}
	for _, e := range h.entries {
		n += e.Tokens
	}
	return n
}

// Messages returns the messages of a request in order: preamble, summary, entries. The slice
// is new; the messages share their strings with the history.
func (h *History) Messages() []llm.Message {
	out := make([]llm.Message, 0, len(h.preamble)+1+len(h.entries))
	for _, e := range h.preamble {
		out = append(out, e.Message)
	}
	if h.summary != nil {
		out = append(out, h.summary.Message)
	}
	for _, e := range h.entries {
		out = append(out, e.Message)
	}
	return out
}

// Entries returns a copy of the entries after the preamble, in order.
func (h *History) Entries() []Entry { return append([]Entry(nil), h.entries...) }

// Summary returns the running summary's text and whether there is one.
func (h *History) Summary() (string, bool) {
	if h.summary == nil {
		return "", false
	}
	return h.summary.Message.Content, true
}

// middle returns the steps of the middle region when the recent window is the last recent
// steps: all steps before it.
func (h *History) middle(recent int) []span {
	steps := h.steps()
	if recent >= len(steps) {
		return nil
	}
	if recent < 1 {
		recent = 1 // the last step is the one the model must answer: never in the middle
	}
	return steps[:len(steps)-recent]
}

// lastCuts returns the tokens that cutting the last step's observations as far as they can be
// would save.
func (h *History) lastCuts(recall bool) int {
	steps := h.steps()
	if len(steps) == 0 {
		return 0
	}
	n := 0
	last := steps[len(steps)-1]
	for i := last.start; i < last.end; i++ {
		n += h.entries[i].Tokens - h.least(i, recall)
	}
	return n
}

// floor returns what the history costs with only the preamble and the last step, cut as far as
// it can be, left: the least a managed tier can send.
func (h *History) floor(recall bool) int {
	n := 0
	for _, e := range h.preamble {
		n += e.Tokens
	}
	steps := h.steps()
	if len(steps) == 0 {
		return n
	}
	last := steps[len(steps)-1]
	for i := last.start; i < last.end; i++ {
		n += h.least(i, recall)
	}
	return n
}
