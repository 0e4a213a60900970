package contextmgr

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dittolab/ditto/internal/llm"
)

// Elision is what one Prepare elided (M1), in history order: the ids of the observations
// replaced by stubs (tool results, and messages the harness wrote such as verifications), the
// ids of the tool-call arguments replaced by stubs (ArgumentID), the steps dropped whole when
// nothing else was left to make room (the running summary's id among them when it went too),
// and the tokens the request saved.
type Elision struct {
	IDs       []string
	Arguments []string
	Dropped   []string
	Saved     int
}

func (el *Elision) empty() bool {
	return len(el.IDs) == 0 && len(el.Arguments) == 0 && len(el.Dropped) == 0
}

// ArgumentID names the arguments of call i (from 0) of the assistant message with id
// message: the id their stub names and recall_event takes.
func ArgumentID(message string, i int) string { return fmt.Sprintf("%s.%d", message, i) }

// stub is the text that replaces an elided observation: a tool's result, or a message the
// harness wrote (a user message after the preamble). With recall on it names the call that
// gives the body back.
func stub(e Entry, tokens int, recall bool) string {
	what := fmt.Sprintf("observation %s from %s", e.ID, toolName(e))
	if e.Message.Role != llm.RoleTool {
		what = fmt.Sprintf("message %s from the harness", e.ID)
	}
	if recall {
		return fmt.Sprintf(`[%s elided: %d tokens; call %s with {"id":%q} to read it]`, what, tokens, RecallToolName, e.ID)
	}
	return fmt.Sprintf("[%s elided: %d tokens]", what, tokens)
}

// argumentStub is the arguments that replace a call's elided arguments: a JSON object (an
// endpoint may parse the arguments of the calls it is sent) whose one field says what was
// there.
func argumentStub(id string, tc llm.ToolCall, tokens int, recall bool) string {
	text := fmt.Sprintf("[arguments %s of this %s call elided: %d tokens]", id, tc.Name, tokens)
	if recall {
		text = fmt.Sprintf(`[arguments %s of this %s call elided: %d tokens; call %s with {"id":%q} to read them]`, id, tc.Name, tokens, RecallToolName, id)
	}
	b, _ := json.Marshal(map[string]string{"elided": text})
	return string(b)
}

func toolName(e Entry) string {
	if e.Tool == "" {
		return "a tool"
	}
	return e.Tool
}

// elide replaces, in the middle region (all steps but the last recent), every observation of
// at least bulky tokens — a tool message, or a user message the harness wrote — by its stub,
// and every tool-call argument of at least bulky tokens of an assistant message by its
// argument stub, storing what it replaced in store when store is not nil. Nothing is replaced
// by a stub that is not smaller. It adds to el.
func (h *History) elide(recent, bulky int, store *Store, el *Elision) {
	for _, s := range h.middle(recent) {
		for i := s.start; i < s.end; i++ {
			e := &h.entries[i]
			switch e.Message.Role {
			case llm.RoleTool, llm.RoleUser:
				h.elideBody(e, bulky, store, el)
			case llm.RoleAssistant:
				h.elideArguments(e, bulky, store, el)
			}
		}
	}
}

func (h *History) elideBody(e *Entry, bulky int, store *Store, el *Elision) {
	// A stub is not elided again; an observation cut to fit (a last step's, earlier) is.
	if (e.Elided && e.full == "") || e.Tokens < bulky {
		return
	}
	body, original := e.original()
	m := e.Message
	m.Content = stub(*e, original, store != nil)
	tokens := MessageTokens(h.counter, m)
	if tokens >= e.Tokens {
		return
	}
	if store != nil {
		store.put(e.ID, body)
	}
	el.IDs = append(el.IDs, e.ID)
	el.Saved += e.Tokens - tokens
	e.Original, e.Tokens, e.Message, e.Elided, e.full = original, tokens, m, true, ""
}

func (h *History) elideArguments(e *Entry, bulky int, store *Store, el *Elision) {
	var calls []llm.ToolCall // copied on the first change: the caller's message is not touched
	for j, tc := range e.Message.ToolCalls {
		id := ArgumentID(e.ID, j)
		if h.stubbed[id] {
			continue
		}
		n := h.counter.Count(tc.Arguments)
		if n < bulky {
			continue
		}
		s := argumentStub(id, tc, n, store != nil)
		k := h.counter.Count(s)
		if k >= n {
			continue
		}
		if calls == nil {
			calls = append([]llm.ToolCall(nil), e.Message.ToolCalls...)
		}
		calls[j].Arguments = s
		if store != nil {
			store.put(id, tc.Arguments)
		}
		h.stubbed[id] = true
		el.Arguments = append(el.Arguments, id)
		el.Saved += n - k
	}
	if calls != nil {
		e.Message.ToolCalls = calls
		e.Tokens = MessageTokens(h.counter, e.Message)
	}
}

// cuttable reports whether entry i may be cut to fit: an observation (a tool message, or a
// message the harness wrote) not replaced by a stub.
func (h *History) cuttable(i int) bool {
	e := h.entries[i]
	return e.Message.Role != llm.RoleAssistant && (!e.Elided || e.full != "")
}

// marker is the text that stands for the part of an observation cut to fit.
func marker(e Entry, tokens int, recall bool) string {
	what := "observation " + e.ID
	if e.Message.Role != llm.RoleTool {
		what = "message " + e.ID + " from the harness"
	}
	if recall {
		return fmt.Sprintf("\n[… %d tokens of %s cut to fit the context window; call %s with {\"id\":%q} to read it whole]\n", tokens, what, RecallToolName, e.ID)
	}
	return fmt.Sprintf("\n[… %d tokens of %s cut to fit the context window]\n", tokens, what)
}

// original is the body of e before any cut, and its tokens.
func (e Entry) original() (string, int) {
	if e.full != "" {
		return e.full, e.Original
	}
	return e.Message.Content, e.Tokens
}

// least returns the tokens entry i of the last step costs when cut as far as it can be: its
// marker alone, or its cost now when that is less.
func (h *History) least(i int, recall bool) int {
	e := h.entries[i]
	if !h.cuttable(i) {
		return e.Tokens
	}
	_, tokens := e.original()
	m := e.Message
	m.Content = marker(e, tokens, recall)
	return min(e.Tokens, MessageTokens(h.counter, m))
}

// trim cuts the observations of the last step, largest first, until excess tokens are saved or
// each is down to its marker: a cut observation keeps its head and tail around a marker naming
// it (and, with store, the call that gives it back whole). The ids cut are added to ids, once
// each.
func (h *History) trim(excess int, store *Store, ids *[]string) {
	steps := h.steps()
	if len(steps) == 0 {
		return
	}
	last := steps[len(steps)-1]
	for excess > 0 {
		big := -1
		for i := last.start; i < last.end; i++ {
			if h.cuttable(i) && h.entries[i].Tokens > h.least(i, store != nil) &&
				(big < 0 || h.entries[i].Tokens > h.entries[big].Tokens) {
				big = i
			}
		}
		if big < 0 {
			return
		}
		e := &h.entries[big]
		target := max(h.least(big, store != nil), e.Tokens-excess)
		body, tokens := e.original()
		if e.full == "" {
			*ids = append(*ids, e.ID)
			e.full, e.Original = body, tokens
			if store != nil {
				store.put(e.ID, body)
			}
		}
		mark := marker(*e, tokens, store != nil)
		cut := func(n int) llm.Message { // n characters kept, half each side
			m := e.Message
			m.Content = strings.ToValidUTF8(body[:n/2], "") + mark + strings.ToValidUTF8(body[len(body)-n/2:], "")
			return m
		}
		// The most characters whose cut fits the target (tokens grow with the characters kept).
		lo, hi := 0, len(body)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if MessageTokens(h.counter, cut(mid)) <= target {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		m := cut(lo)
		n := MessageTokens(h.counter, m)
		excess -= e.Tokens - n
		e.Tokens, e.Message, e.Elided = n, m, true
	}
}

// drop removes the oldest step of the middle region (the recent window being the last step)
// and returns the ids of its messages; none when the middle region is empty.
func (h *History) drop() []string {
	middle := h.middle(1)
	if len(middle) == 0 {
		return nil
	}
	end := middle[0].end
	ids := make([]string, 0, end)
	for _, e := range h.entries[:end] {
		ids = append(ids, e.ID)
	}
	h.entries = append([]Entry(nil), h.entries[end:]...)
	return ids
}

// dropSummary removes the running summary and returns its id ("" when there is none).
func (h *History) dropSummary() string {
	if h.summary == nil {
		return ""
	}
	id := h.summary.ID
	h.summary = nil
	return id
}
