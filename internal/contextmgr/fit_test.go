package contextmgr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

// runRecord is a recorded coding run: the last request a simulated run sent, with the tools it
// offered and the completion it reserved (testdata/bash_heredoc_session.json,
// testdata/file_tools_session.json).
type runRecord struct {
	About     string `json:"about"`
	MaxTokens int    `json:"max_tokens"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
	Messages []recorded `json:"messages"`
}

func (r runRecord) tools() []llm.ToolDef {
	var out []llm.ToolDef
	for _, t := range r.Tools {
		out = append(out, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out
}

// offered returns the tools a request of r's run offers under tier.
func offered(r runRecord, tier contextmgr.Tier) []llm.ToolDef {
	if tier.Recalls() {
		return append(r.tools(), contextmgr.RecallTool())
	}
	return r.tools()
}

// recordedRuns returns the recorded runs by name: the two simulated runs and the hand-written
// coding session (offered a bash tool, 512 completion tokens reserved).
func recordedRuns(t testing.TB) map[string]runRecord {
	t.Helper()
	out := map[string]runRecord{}
	for name, file := range map[string]string{"bash": "testdata/bash_heredoc_session.json", "files": "testdata/file_tools_session.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(r.Messages) < 3 || r.MaxTokens <= 0 || len(r.Tools) == 0 {
			t.Fatalf("%s: %d messages, max_tokens %d, %d tools", file, len(r.Messages), r.MaxTokens, len(r.Tools))
		}
		out[name] = r
	}
	bash := out["bash"]
	out["session"] = runRecord{MaxTokens: 512, Tools: bash.Tools, Messages: session(t)}
	return out
}

// memoBPE is contextmgr.BPE remembering its counts: the replays count the same bodies at every
// budget.
var memoBPE = &memoCounter{c: contextmgr.BPE(), n: map[string]int{}}

type memoCounter struct {
	c  contextmgr.Counter
	mu sync.Mutex
	n  map[string]int
}

func (m *memoCounter) Count(text string) int {
	m.mu.Lock()
	n, ok := m.n[text]
	m.mu.Unlock()
	if !ok {
		n = m.c.Count(text)
		m.mu.Lock()
		m.n[text] = n
		m.mu.Unlock()
	}
	return n
}

// fitStep is one request of a replay: what the manager returned, and the history's size before
// it acted.
type fitStep struct {
	at     string // the id of the last message added
	need   int    // history plus fixed tokens before Prepare
	floor  int    // an upper bound of what the preamble, the fixed tokens and the last step can shrink to
	tokens int
	err    error
}

// replayRun adds r's messages to a new history and prepares a request before each assistant
// message and after the last message, as a coding loop does, under cfg; it stops at the first
// error. check is called after each Prepare.
func replayRun(t *testing.T, r runRecord, cfg contextmgr.Config, check func(fitStep, contextmgr.Prepared)) *contextmgr.Manager {
	t.Helper()
	m, err := contextmgr.New(cfg, &recordingSummarizer{words: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := memoBPE
	pre := []llm.Message{r.Messages[0].message(), r.Messages[1].message()}
	h := contextmgr.NewHistory(c, pre...)
	fixed := contextmgr.ToolTokens(c, append(r.tools(), m.Tools()...)) + r.MaxTokens
	rest := r.Messages[2:]
	for i, rec := range rest {
		if err := h.Add(rec.ID, rec.message(), rec.Tool); err != nil {
			t.Fatalf("Add(%s): %v", rec.ID, err)
		}
		if i+1 < len(rest) && rest[i+1].Role != llm.RoleAssistant {
			continue
		}
		s := fitStep{at: rec.ID, need: h.Tokens() + fixed, floor: fixed + irreducibleBound(c, r, i+3)}
		p, err := m.Prepare(context.Background(), h, fixed)
		s.tokens, s.err = p.Tokens, err
		check(s, p)
		if err != nil {
			return m
		}
		checkSequence(t, p.Messages, pre)
	}
	return m
}

// irreducibleBound is an upper bound of the tokens the preamble and the last step (ending at
// message upto-1 of r) cost once everything a managed tier may cut is cut: the preamble and
// the last step's assistant message whole, each observation or harness message of the last step
// at its cost or 64 tokens (a marker in its place costs less), whichever is smaller.
func irreducibleBound(c contextmgr.Counter, r runRecord, upto int) int {
	n := 0
	for _, rec := range r.Messages[:2] {
		n += contextmgr.MessageTokens(c, rec.message())
	}
	start := upto - 1
	for start > 2 && r.Messages[start].Role == llm.RoleTool {
		start--
	}
	for _, rec := range r.Messages[start:upto] {
		k := contextmgr.MessageTokens(c, rec.message())
		if rec.Role != llm.RoleAssistant {
			k = min(k, 64)
		}
		n += k
	}
	return n
}

// TestEveryBudgetFits replays each recorded run under every tier at every budget from the
// preamble's size (system prompt, task, tools, completion reserved) up to the whole run's: no
// Prepare returns a request over the budget; T0 overflows exactly when the history passes the
// budget; a managed tier (T1–T4) overflows only when the preamble and the last step alone,
// cut as far as they can be, do not fit.
func TestEveryBudgetFits(t *testing.T) {
	c := contextmgr.BPE()
	for name, r := range recordedRuns(t) {
		pre := contextmgr.ToolTokens(c, r.tools()) + r.MaxTokens
		whole := pre
		for i, rec := range r.Messages {
			k := contextmgr.MessageTokens(c, rec.message())
			whole += k
			if i < 2 {
				pre += k
			}
		}
		// Every budget of the recorded runs; every 7th of the hand-written session, whose long
		// replays and summaries would take most of a minute at each.
		step := 1
		if name == "session" {
			step = 7
		}
		for _, tier := range contextmgr.Tiers {
			t.Run(fmt.Sprintf("%s/%s", name, tier), func(t *testing.T) {
				t.Parallel()
				bad := 0
				for budget := pre; budget <= whole+step; budget += step {
					cfg := contextmgr.Preset(tier, budget)
					replayRun(t, r, cfg, func(s fitStep, p contextmgr.Prepared) {
						var oe *contextmgr.OverflowError
						over := errors.As(s.err, &oe)
						switch {
						case s.err != nil && !over:
							t.Fatalf("budget %d, after %s: %v", budget, s.at, s.err)
						case s.err == nil && s.tokens > budget:
							t.Fatalf("budget %d, after %s: a request of %d tokens", budget, s.at, s.tokens)
						case tier == contextmgr.T0 && over != (s.need > budget):
							t.Fatalf("T0, budget %d, after %s: %d tokens needed, overflow %v", budget, s.at, s.need, over)
						case tier != contextmgr.T0 && over && s.floor <= budget:
							if bad++; bad <= 5 {
								t.Errorf("budget %d, after %s: overflowed (%v), but the preamble and the last step fit in %d", budget, s.at, s.err, s.floor)
							}
						case over && (oe.Reason == contextmgr.ReasonUnmanaged) != (tier == contextmgr.T0),
							over && tier != contextmgr.T0 && (oe.Reason != contextmgr.ReasonPreamble || oe.Floor <= budget):
							t.Fatalf("budget %d, after %s: %+v; want T0's overflows unmanaged, the others' the preamble's", budget, s.at, oe)
						}
					})
				}
				if bad > 5 {
					t.Errorf("… %d overflows in all where the preamble and the last step fit", bad)
				}
			})
		}
	}
}

// replayAll builds the history of all of r's messages.
func replayAll(t *testing.T, r runRecord) *contextmgr.History {
	t.Helper()
	h := contextmgr.NewHistory(contextmgr.BPE(), r.Messages[0].message(), r.Messages[1].message())
	for _, rec := range r.Messages[2:] {
		if err := h.Add(rec.ID, rec.message(), rec.Tool); err != nil {
			t.Fatalf("Add(%s): %v", rec.ID, err)
		}
	}
	return h
}

// middleOf returns the entries of h outside its last recent steps.
func middleOf(h *contextmgr.History, recent int) []contextmgr.Entry {
	es := h.Entries()
	steps := 0
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Message.Role != llm.RoleTool {
			if steps++; steps == recent {
				return es[:i]
			}
		}
	}
	return nil
}

// TestArgumentsElided: above the soft threshold M1 replaces the bulky tool-call arguments of
// the middle region (here the whole-file here-documents of a bash run) by a JSON stub naming
// the call's arguments id, its tool and its size; under T2 the arguments are stored and
// recall_event gives them back exactly. Below the soft threshold nothing is elided.
func TestArgumentsElided(t *testing.T) {
	r := recordedRuns(t)["bash"]
	c := contextmgr.BPE()
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2} {
		t.Run(tier.String(), func(t *testing.T) {
			h := replayAll(t, r)
			cfg := contextmgr.Config{Tier: tier, Budget: h.Tokens() * 2, Soft: h.Tokens() - 1, Recent: 2, Bulky: 200}
			var want []string
			originals := map[string]string{}
			for _, e := range middleOf(h, cfg.Recent) {
				for i, tc := range e.Message.ToolCalls {
					if c.Count(tc.Arguments) >= cfg.Bulky {
						id := contextmgr.ArgumentID(e.ID, i)
						want = append(want, id)
						originals[id] = tc.Arguments
					}
				}
			}
			if len(want) < 2 {
				t.Fatalf("the bash run has %d bulky middle arguments; the test needs several", len(want))
			}
			before := h.Entries()
			below := cfg
			below.Soft = h.Tokens()
			m, err := contextmgr.New(below, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := m.Prepare(context.Background(), replayAll(t, r), 0); err != nil || p.Elided != nil {
				t.Fatalf("at the soft threshold: elided %+v, %v; want nothing", p.Elided, err)
			}
			if m, err = contextmgr.New(cfg, nil); err != nil {
				t.Fatal(err)
			}
			p, err := m.Prepare(context.Background(), h, 0)
			if err != nil || p.Elided == nil || fmt.Sprint(p.Elided.Arguments) != fmt.Sprint(want) {
				t.Fatalf("Prepare elided %+v, %v; want the arguments %v", p.Elided, err, want)
			}
			saved := 0
			for i, e := range h.Entries() {
				b := before[i]
				saved += b.Tokens - e.Tokens
				if e.Message.Role != llm.RoleAssistant {
					continue
				}
				for j, tc := range e.Message.ToolCalls {
					id := contextmgr.ArgumentID(e.ID, j)
					bc := b.Message.ToolCalls[j]
					if tc.ID != bc.ID || tc.Name != bc.Name {
						t.Errorf("%s: call %s %s became %s %s", id, bc.ID, bc.Name, tc.ID, tc.Name)
					}
					if _, elided := originals[id]; !elided {
						if tc.Arguments != bc.Arguments {
							t.Errorf("%s changed though its arguments are not bulky in the middle", id)
						}
						continue
					}
					var stub struct{ Elided string }
					if err := json.Unmarshal([]byte(tc.Arguments), &stub); err != nil || !strings.Contains(stub.Elided, id) ||
						!strings.Contains(stub.Elided, tc.Name) || strings.Contains(stub.Elided, contextmgr.RecallToolName) != tier.Recalls() {
						t.Errorf("%s stub %q (%v): want JSON naming the id, the tool and recall exactly under recall tiers", id, tc.Arguments, err)
					}
				}
			}
			if p.Elided.Saved != saved || p.Tokens != h.Tokens() {
				t.Errorf("saved %d, want %d; request %d, history %d", p.Elided.Saved, saved, p.Tokens, h.Tokens())
			}
			for _, id := range want {
				body, err := m.Recall(id)
				if tier.Recalls() != (err == nil && body == originals[id]) {
					t.Errorf("Recall(%s) = %.30q, %v; want the arguments exactly under recall tiers", id, body, err)
				}
			}
			if got := m.Counts().Elided; got != len(p.Elided.IDs)+len(want) {
				t.Errorf("Counts().Elided = %d, want the %d observations and %d arguments", got, len(p.Elided.IDs), len(want))
			}
		})
	}
}

// TestHarnessMessagesElided: the verifications the harness wrote (user messages after the
// preamble) are observations too: bulky ones in the middle region are replaced by stubs and,
// under recall, stored. The task, in the preamble, is never touched.
func TestHarnessMessagesElided(t *testing.T) {
	r := recordedRuns(t)["files"]
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2} {
		h := replayAll(t, r)
		cfg := contextmgr.Config{Tier: tier, Budget: h.Tokens() * 2, Soft: 1, Recent: 1, Bulky: 30}
		var want []string
		originals := map[string]string{}
		for _, e := range middleOf(h, cfg.Recent) {
			if e.Message.Role == llm.RoleUser && e.Tokens >= cfg.Bulky {
				want = append(want, e.ID)
				originals[e.ID] = e.Message.Content
			}
		}
		if len(want) < 2 {
			t.Fatalf("the files run has %d verifications in the middle; the test needs several", len(want))
		}
		m, err := contextmgr.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Prepare(context.Background(), h, 0)
		if err != nil || p.Elided == nil {
			t.Fatalf("%s: Prepare = %+v, %v", tier, p.Elided, err)
		}
		elided := map[string]bool{}
		for _, id := range p.Elided.IDs {
			elided[id] = true
		}
		for _, id := range want {
			body, rerr := m.Recall(id)
			if !elided[id] || tier.Recalls() != (rerr == nil && body == originals[id]) {
				t.Errorf("%s: %s elided %v, Recall = %.30q, %v; want it elided, and stored exactly under recall", tier, id, elided[id], body, rerr)
			}
		}
		for _, e := range h.Entries() {
			if _, ok := originals[e.ID]; ok && !strings.Contains(e.Message.Content, "message "+e.ID+" from the harness elided") {
				t.Errorf("%s: %s reads %q, want its stub", tier, e.ID, e.Message.Content)
			}
		}
		if got := p.Messages[1].Content; got != r.Messages[1].Content {
			t.Errorf("%s: the task became %.40q", tier, got)
		}
	}
}

// TestOldestStepsDropped: when the preamble and the last step fit but even the middle region's
// stubs do not, T1 and T2 drop the oldest steps whole (never splitting a call from its
// results) and the request fits; T3 and T4 fold them and, if need be, drop the summary.
func TestOldestStepsDropped(t *testing.T) {
	r := recordedRuns(t)["bash"]
	c := contextmgr.BPE()
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2, contextmgr.T3, contextmgr.T4} {
		h := replayAll(t, r)
		fixed := contextmgr.ToolTokens(c, offered(r, tier)) + r.MaxTokens
		budget := fixed + irreducibleBound(c, r, len(r.Messages)) + 10
		// A summary as long as what it folds leaves the summarizing tiers no room either.
		m, err := contextmgr.New(contextmgr.Preset(tier, budget), longSummarizer{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Prepare(context.Background(), h, fixed)
		if err != nil || p.Tokens > budget || p.Elided == nil || len(p.Elided.Dropped) == 0 {
			t.Fatalf("%s at %d: Prepare = %d tokens, %+v, %v; want oldest steps dropped to fit", tier, budget, p.Tokens, p.Elided, err)
		}
		if _, ok := h.Summary(); tier.Summarizes() && (ok || !strings.HasPrefix(p.Elided.Dropped[len(p.Elided.Dropped)-1], "summary-")) {
			t.Errorf("%s: dropped %v, summary left %v; want the summary dropped last", tier, p.Elided.Dropped, ok)
		}
		checkSequence(t, p.Messages, []llm.Message{r.Messages[0].message(), r.Messages[1].message()})
		left := map[string]bool{}
		for _, e := range h.Entries() {
			left[e.ID] = true
		}
		for _, id := range p.Elided.Dropped {
			if left[id] {
				t.Errorf("%s: %s dropped and still in the history", tier, id)
			}
		}
		if last := r.Messages[len(r.Messages)-1].ID; !left[last] {
			t.Errorf("%s: the last step (%s) was dropped", tier, last)
		}
		if c := m.Counts(); c.Dropped != len(p.Elided.Dropped) {
			t.Errorf("%s: Counts().Dropped = %d, want %d", tier, c.Dropped, len(p.Elided.Dropped))
		}
	}
}

// TestOverflowReason: T0's overflow says the context was not managed; a managed tier's says the
// preamble (with the tools, the completion reserved and the last step cut to its marker) alone
// is over the budget, with that floor.
func TestOverflowReason(t *testing.T) {
	r := recordedRuns(t)["files"]
	c := contextmgr.BPE()
	fixed := contextmgr.ToolTokens(c, r.tools()) + r.MaxTokens
	for _, tier := range contextmgr.Tiers {
		h := replayAll(t, r)
		budget := fixed + 100 // below the preamble alone
		m, err := contextmgr.New(contextmgr.Preset(tier, budget), &recordingSummarizer{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Prepare(context.Background(), h, fixed)
		var oe *contextmgr.OverflowError
		if !errors.As(err, &oe) {
			t.Fatalf("%s: Prepare = %v, want an OverflowError", tier, err)
		}
		want := contextmgr.ReasonPreamble
		if tier == contextmgr.T0 {
			want = contextmgr.ReasonUnmanaged
		}
		if oe.Reason != want || (tier != contextmgr.T0 && (oe.Floor <= budget || oe.Needed != oe.Floor)) {
			t.Errorf("%s: %+v, want reason %s and, managed, a floor over %d that is all that is left", tier, oe, want, budget)
		}
	}
}

// TestRecalledBodyFits: a recalled body is an observation like any other. Too big for what is
// left of the window in the last step, it is cut to fit (the marker names it, recall gives it
// whole); once stale, it is elided again.
func TestRecalledBodyFits(t *testing.T) {
	r := recordedRuns(t)["bash"]
	c := contextmgr.BPE()
	h := replayAll(t, r)
	fixed := contextmgr.ToolTokens(c, offered(r, contextmgr.T2)) + r.MaxTokens
	budget := fixed + irreducibleBound(c, r, 2) + 600
	m, err := contextmgr.New(contextmgr.Preset(contextmgr.T2, budget), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Prepare(context.Background(), h, fixed)
	if err != nil || p.Elided == nil || len(p.Elided.Arguments) == 0 {
		t.Fatalf("Prepare = %+v, %v; want arguments elided", p.Elided, err)
	}
	id := p.Elided.Arguments[0]
	body, err := m.Recall(id)
	if err != nil {
		t.Fatal(err)
	}
	call := llm.ToolCall{ID: "call-r", Name: contextmgr.RecallToolName, Arguments: fmt.Sprintf(`{"id":%q}`, id)}
	for _, add := range []struct {
		id   string
		m    llm.Message
		tool string
	}{
		{"r1", llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, ""},
		{"r2", llm.Message{Role: llm.RoleTool, ToolCallID: "call-r", Content: body + "\n" + body}, contextmgr.RecallToolName},
	} {
		if err := h.Add(add.id, add.m, add.tool); err != nil {
			t.Fatal(err)
		}
	}
	p, err = m.Prepare(context.Background(), h, fixed)
	if err != nil || p.Tokens > budget || fmt.Sprint(p.Trimmed) != "[r2]" {
		t.Fatalf("Prepare after the recall = %d tokens of %d, trimmed %v, %v; want r2 cut to fit", p.Tokens, budget, p.Trimmed, err)
	}
	if last := p.Messages[len(p.Messages)-1].Content; !strings.Contains(last, "observation r2 cut to fit") {
		t.Errorf("the recalled body reads %.80q…, want a marker naming r2", last)
	}
	if whole, err := m.Recall("r2"); err != nil || whole != body+"\n"+body {
		t.Errorf("Recall(r2) = %.30q, %v; want the whole recalled body", whole, err)
	}
	for _, add := range []struct {
		id string
		m  llm.Message
	}{
		{"v1", llm.Message{Role: llm.RoleUser, Content: "The verification after your change: ok"}},
		{"a9", llm.Message{Role: llm.RoleAssistant, Content: "done"}},
		{"v2", llm.Message{Role: llm.RoleUser, Content: "The verification after your change: ok"}},
	} {
		if err := h.Add(add.id, add.m, ""); err != nil {
			t.Fatal(err)
		}
	}
	p, err = m.Prepare(context.Background(), h, fixed)
	if err != nil || p.Elided == nil || !strings.Contains(fmt.Sprint(p.Elided.IDs), "r2") {
		t.Fatalf("Prepare with the recall stale = %+v, %v; want r2 elided again", p.Elided, err)
	}
}

// longSummarizer writes a summary of 300 words whatever it folds.
type longSummarizer struct{}

func (longSummarizer) Summarize(context.Context, string, []llm.Message, int) (contextmgr.Summary, error) {
	return contextmgr.Summary{Text: strings.Repeat("word ", 300)}, nil
}
