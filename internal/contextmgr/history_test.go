package contextmgr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

// recorded is one message of testdata/coding_session.json, a coding agent's session (a slice
// bound defect found, patched twice, tests passing) written for these tests: a preamble of two
// messages, eleven tool steps with bulky reads and test logs, and a final answer.
type recorded struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCalls  []struct{ ID, Name, Arguments string }
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
}

func (r *recorded) UnmarshalJSON(b []byte) error {
	type plain recorded
	var aux struct {
		plain
		Calls []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = recorded(aux.plain)
	for _, c := range aux.Calls {
		r.ToolCalls = append(r.ToolCalls, struct{ ID, Name, Arguments string }{c.ID, c.Name, c.Arguments})
	}
	return nil
}

func (r recorded) message() llm.Message {
	m := llm.Message{Role: r.Role, Content: r.Content, ToolCallID: r.ToolCallID}
	for _, c := range r.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return m
}

func session(t testing.TB) []recorded {
	t.Helper()
	b, err := os.ReadFile("testdata/coding_session.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs []recorded
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// replay builds the session's history up to (not including) message upto; upto < 0 means all.
func replay(t testing.TB, upto int) *contextmgr.History {
	t.Helper()
	rs := session(t)
	if upto < 0 {
		upto = len(rs)
	}
	h := contextmgr.NewHistory(contextmgr.BPE(), rs[0].message(), rs[1].message())
	for _, r := range rs[2:upto] {
		if err := h.Add(r.ID, r.message(), r.Tool); err != nil {
			t.Fatalf("Add(%s) = %v", r.ID, err)
		}
	}
	return h
}

// checkSequence fails when a tool message does not answer a call of the assistant message
// before it (an endpoint refuses such a request), or the preamble is not first.
func checkSequence(t *testing.T, ms []llm.Message, preamble []llm.Message) {
	t.Helper()
	for i, p := range preamble {
		if ms[i].Role != p.Role || ms[i].Content != p.Content {
			t.Fatalf("message %d = %s %.40q, want the preamble's %.40q", i, ms[i].Role, ms[i].Content, p.Content)
		}
	}
	pending := map[string]bool{}
	for i, m := range ms {
		switch m.Role {
		case llm.RoleAssistant:
			pending = map[string]bool{}
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
		case llm.RoleTool:
			if !pending[m.ToolCallID] {
				t.Fatalf("message %d answers call %q, which the assistant message before it did not make", i, m.ToolCallID)
			}
		default:
			pending = map[string]bool{}
		}
	}
}

func TestBPECountsTokens(t *testing.T) {
	c := contextmgr.BPE()
	for _, tt := range []struct {
		give string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"tiktoken is great!", 6},
	} {
		if got := c.Count(tt.give); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.give, got, tt.want)
		}
	}
	m := llm.Message{Role: llm.RoleAssistant, Content: "hello world", ToolCalls: []llm.ToolCall{{ID: "c", Name: "read", Arguments: `{"path":"a.go"}`}}}
	want := 4 + 2 + 3 + c.Count("read") + c.Count(`{"path":"a.go"}`)
	if got := contextmgr.MessageTokens(c, m); got != want {
		t.Errorf("MessageTokens = %d, want %d", got, want)
	}
}

func TestHistoryRefusesOrphansAndDuplicates(t *testing.T) {
	h := contextmgr.NewHistory(contextmgr.BPE(), llm.Message{Role: llm.RoleSystem, Content: "s"})
	if err := h.Add("t1", llm.Message{Role: llm.RoleTool, ToolCallID: "x", Content: "out"}, "read"); !errors.Is(err, contextmgr.ErrOrphanToolMessage) {
		t.Errorf("Add(tool message first) = %v, want ErrOrphanToolMessage", err)
	}
	if err := h.Add("a1", llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read"}}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.Add("t2", llm.Message{Role: llm.RoleTool, ToolCallID: "c2", Content: "out"}, "read"); !errors.Is(err, contextmgr.ErrOrphanToolMessage) {
		t.Errorf("Add(answer to another call) = %v, want ErrOrphanToolMessage", err)
	}
	if err := h.Add("a1", llm.Message{Role: llm.RoleUser, Content: "again"}, ""); !errors.Is(err, contextmgr.ErrDuplicateID) {
		t.Errorf("Add(used id) = %v, want ErrDuplicateID", err)
	}
	if err := h.Add("p0", llm.Message{Role: llm.RoleUser, Content: "again"}, ""); !errors.Is(err, contextmgr.ErrDuplicateID) {
		t.Errorf("Add(preamble's id) = %v, want ErrDuplicateID", err)
	}
}

// T0 overflows exactly when the request's count passes the budget.
func TestT0OverflowsExactlyAtBudget(t *testing.T) {
	const fixed = 100
	h := replay(t, -1)
	n := h.Tokens() + fixed
	for _, budget := range []int{n - 1, n, n + 1, n / 2} {
		m, err := contextmgr.New(contextmgr.Config{Tier: contextmgr.T0, Budget: budget}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Prepare(context.Background(), h, fixed)
		var oe *contextmgr.OverflowError
		switch {
		case budget < n && (!errors.As(err, &oe) || oe.Needed != n || oe.Budget != budget || !errors.Is(err, contextmgr.ErrOverflow)):
			t.Errorf("budget %d < %d: Prepare = %v, want an OverflowError of %d needed", budget, n, err, n)
		case budget >= n && (err != nil || p.Tokens != n || len(p.Messages) != len(session(t))):
			t.Errorf("budget %d >= %d: Prepare = %d tokens, %d messages, %v; want all of it", budget, n, p.Tokens, len(p.Messages), err)
		}
	}
	if h.Tokens()+fixed != n {
		t.Error("T0 changed the history")
	}
}

// bulkyMiddle lists the observations M1 must elide: tool messages of at least bulky tokens in
// every step but the last recent ones.
func bulkyMiddle(h *contextmgr.History, recent, bulky int) (ids []string, saved map[string]int) {
	es := h.Entries()
	steps := 0
	for _, e := range es {
		if e.Message.Role != llm.RoleTool {
			steps++
		}
	}
	step := 0
	saved = map[string]int{}
	for _, e := range es {
		if e.Message.Role != llm.RoleTool {
			step++
			continue
		}
		if step <= steps-recent && e.Tokens >= bulky {
			ids = append(ids, e.ID)
			saved[e.ID] = e.Tokens
		}
	}
	return ids, saved
}

func TestElisionM1(t *testing.T) {
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2} {
		t.Run(tier.String(), func(t *testing.T) {
			h := replay(t, -1)
			before := h.Entries()
			cfg := contextmgr.Config{Tier: tier, Budget: h.Tokens() * 2, Soft: h.Tokens() - 1, Recent: 3, Bulky: 200}
			wantIDs, sizes := bulkyMiddle(h, cfg.Recent, cfg.Bulky)
			if len(wantIDs) < 3 {
				t.Fatalf("the session has %d bulky middle observations; the test needs several", len(wantIDs))
			}
			m, err := contextmgr.New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := m.Prepare(context.Background(), h, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Elided == nil || fmt.Sprint(p.Elided.IDs) != fmt.Sprint(wantIDs) {
				t.Fatalf("elided %v, want %v", p.Elided, wantIDs)
			}
			after := h.Entries()
			saved := 0
			for i, e := range after {
				b := before[i]
				if _, elided := sizes[e.ID]; !elided {
					if e.Message.Content != b.Message.Content || e.Elided {
						t.Errorf("%s changed though it is not a bulky middle observation", e.ID)
					}
					continue
				}
				saved += b.Tokens - e.Tokens
				if !e.Elided || e.Original != b.Tokens || e.Message.ToolCallID != b.Message.ToolCallID {
					t.Errorf("%s: %+v, want an elided stub answering %s with original %d", e.ID, e, b.Message.ToolCallID, b.Tokens)
				}
				hint := strings.Contains(e.Message.Content, contextmgr.RecallToolName)
				if !strings.Contains(e.Message.Content, e.ID) || hint != tier.Recalls() {
					t.Errorf("%s stub %q: want its id, and the recall hint exactly under recall tiers", e.ID, e.Message.Content)
				}
			}
			if p.Elided.Saved != saved || p.Tokens != h.Tokens() {
				t.Errorf("saved %d (history %d), want %d (request %d)", p.Elided.Saved, h.Tokens(), saved, p.Tokens)
			}
			checkSequence(t, p.Messages, nil)
			// Below the soft threshold nothing more happens.
			p2, err := m.Prepare(context.Background(), h, 0)
			if err != nil || p2.Elided != nil {
				t.Errorf("second Prepare elided %v (%v), want nothing", p2.Elided, err)
			}
			if c := m.Counts(); c.Elisions != 1 || c.Elided != len(wantIDs) {
				t.Errorf("Counts = %+v, want 1 elision of %d", c, len(wantIDs))
			}
		})
	}
}

func TestRecallM2(t *testing.T) {
	h := replay(t, -1)
	originals := map[string]string{}
	for _, e := range h.Entries() {
		originals[e.ID] = e.Message.Content
	}
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2} {
		h := replay(t, -1)
		m, err := contextmgr.New(contextmgr.Config{Tier: tier, Budget: h.Tokens(), Soft: 1, Recent: 2, Bulky: 200}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Prepare(context.Background(), h, 0)
		if err != nil || p.Elided == nil {
			t.Fatalf("%s: Prepare = %+v, %v", tier, p.Elided, err)
		}
		if got := len(m.Tools()) == 1 && m.Tools()[0].Name == contextmgr.RecallToolName; got != tier.Recalls() {
			t.Errorf("%s offers recall_event: %v, want %v", tier, got, tier.Recalls())
		}
		for _, id := range p.Elided.IDs {
			body, err := m.Recall(id)
			switch {
			case tier.Recalls() && (err != nil || body != originals[id]):
				t.Errorf("%s: Recall(%s) = %.30q, %v; want the original body", tier, id, body, err)
			case !tier.Recalls() && !errors.Is(err, contextmgr.ErrNotStored):
				t.Errorf("%s: Recall(%s) = %v, want ErrNotStored (no store without M2)", tier, id, err)
			}
		}
		if _, err := m.Recall("o999"); !errors.Is(err, contextmgr.ErrNotStored) {
			t.Errorf("%s: Recall(unknown) = %v, want ErrNotStored", tier, err)
		}
		if want := map[bool]int{true: len(p.Elided.IDs), false: 0}[tier.Recalls()]; m.Counts().Recalls != want {
			t.Errorf("%s: Counts().Recalls = %d, want %d", tier, m.Counts().Recalls, want)
		}
	}
	for _, tt := range []struct{ give, want string }{{`{"id":"o3"}`, "o3"}, {`{}`, ""}, {`{"id":""}`, ""}, {`not json`, ""}} {
		got, err := contextmgr.ParseRecall(tt.give)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("ParseRecall(%q) = %q, %v; want %q", tt.give, got, err, tt.want)
		}
	}
}
