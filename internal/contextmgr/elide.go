package contextmgr

import (
	"fmt"
	"strings"

	"github.com/dittolab/ditto/internal/llm"
)

// Elision is what one Prepare elided (M1): the ids of the observations replaced by stubs, in
// history order, and the tokens the request saved.
type Elision struct {
	IDs   []string
	Saved int
}

// stub is the text that replaces an elided observation. With recall on it names the call that
// gives the body back.
func stub(e Entry, recall bool) string {
	if recall {
		return fmt.Sprintf(`[observation %s from %s elided: %d tokens; call %s with {"id":%q} to read it]`, e.ID, toolName(e), e.Tokens, RecallToolName, e.ID)
	}
	return fmt.Sprintf("[observation %s from %s elided: %d tokens]", e.ID, toolName(e), e.Tokens)
}

func toolName(e Entry) string {
	if e.Tool == "" {
		return "a tool"
	}
	return e.Tool
}

// elide replaces every tool message of at least bulky tokens in the middle region (all steps
// but the last recent) by its stub, storing the body in store when store is not nil. An
// observation is elided only where the stub is smaller than the body. It adds to el.
func (h *History) elide(recent, bulky int, store *Store, el *Elision) {
	for _, s := range h.middle(recent) {
		for i := s.start; i < s.end; i++ {
			e := &h.entries[i]
			if e.Message.Role != llm.RoleTool || e.Elided || e.Tokens < bulky {
				continue
			}
			text := stub(*e, store != nil)
			m := e.Message
			m.Content = text
			tokens := MessageTokens(h.counter, m)
			if tokens >= e.Tokens {
				continue
			}
			if store != nil {
				store.put(e.ID, e.Message.Content)
			}
			el.IDs = append(el.IDs, e.ID)
			el.Saved += e.Tokens - tokens
			e.Original, e.Tokens, e.Message, e.Elided = e.Tokens, tokens, m, true
		}
	}
}

// trim cuts the largest observations of the last step until excess tokens are saved or none
// is left to cut: each keeps its head and tail around a marker naming it (and, with store, the
// call that gives it back whole). The ids cut are added to ids, once each.
func (h *History) trim(excess int, store *Store, ids *[]string) {
	steps := h.steps()
	if len(steps) == 0 {
		return
	}
	last := steps[len(steps)-1]
	bodies := map[int]string{} // index → the body before any cut
	for round := 0; excess > 0 && round < 16; round++ {
		big := -1
		for i := last.start; i < last.end; i++ {
			e := h.entries[i]
			if e.Message.Role != llm.RoleTool || (e.Elided && bodies[i] == "") {
				continue // not an observation, or elided before (a stub is not cut)
			}
			if big < 0 || e.Tokens > h.entries[big].Tokens {
				big = i
			}
		}
		if big < 0 {
			return
		}
		e := &h.entries[big]
		body, cut := bodies[big]
		if !cut {
			body = e.Message.Content
			bodies[big] = body
			*ids = append(*ids, e.ID)
			e.Original = e.Tokens
			if store != nil {
				store.put(e.ID, body)
			}
		}
		marker := fmt.Sprintf("\n[… %d tokens of observation %s cut to fit the context window]\n", e.Original, e.ID)
		if store != nil {
			marker = fmt.Sprintf("\n[… %d tokens of observation %s cut to fit the context window; call %s with {\"id\":%q} to read it whole]\n", e.Original, e.ID, RecallToolName, e.ID)
		}
		// Keep a share of the body's characters proportional to the tokens that may stay
		// beside the marker; tokens are not spread evenly over the characters, so each round
		// asks for a little more than the excess.
		target := e.Tokens - excess - messageOverhead - h.counter.Count(marker) - 4*round
		n := 0
		if target > 0 && e.Original > 0 {
			n = min(len(body), len(body)*target/e.Original)
		}
		m := e.Message
		m.Content = strings.ToValidUTF8(body[:n/2], "") + marker + strings.ToValidUTF8(body[len(body)-n/2:], "")
		tokens := MessageTokens(h.counter, m)
		if n == 0 && tokens >= e.Tokens {
			return // the marker alone is left and still too much
		}
		excess -= e.Tokens - tokens
		e.Tokens, e.Message, e.Elided = tokens, m, true
	}
}
