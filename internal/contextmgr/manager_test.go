package contextmgr_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

// recordingSummarizer writes a summary of fixed shape — one line per folded message, cut to
// words — and keeps what it was asked.
type recordingSummarizer struct {
	calls []summaryCall
	words int
	fail  error
}

type summaryCall struct {
	prior  string
	folded []llm.Message
	max    int
}

func (s *recordingSummarizer) Summarize(_ context.Context, prior string, folded []llm.Message, maxTokens int) (contextmgr.Summary, error) {
	s.calls = append(s.calls, summaryCall{prior, append([]llm.Message(nil), folded...), maxTokens})
	if s.fail != nil {
		return contextmgr.Summary{}, s.fail
	}
	words := s.words
	if words == 0 {
		words = 6
	}
	var b strings.Builder
	if prior != "" {
		b.WriteString("(then) ")
	}
	for _, m := range folded {
		f := strings.Fields(m.Content)
		fmt.Fprintf(&b, "%s: %s; ", m.Role, strings.Join(f[:min(len(f), words)], " "))
	}
	return contextmgr.Summary{Text: b.String(), Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
}

func TestSummarizationM3(t *testing.T) {
	h := replay(t, -1)
	ids := h.Entries()
	total := h.Tokens()
	s := &recordingSummarizer{}
	cfg := contextmgr.Config{Tier: contextmgr.T3, Budget: total, Soft: total / 2, Recent: 3, SummaryTokens: 300}
	m, err := contextmgr.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Prepare(context.Background(), h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Summarized) == 0 || len(s.calls) != len(p.Summarized) {
		t.Fatalf("%d summarizations, %d calls; want at least one of each, as many", len(p.Summarized), len(s.calls))
	}
	if p.Tokens > cfg.Soft {
		t.Errorf("request of %d tokens after summarization, want at most the soft threshold %d", p.Tokens, cfg.Soft)
	}
	// The oldest entries were folded, whole steps of them, in order; the first call had no
	// prior summary and later ones had the previous summary.
	var folded []string
	for i, sum := range p.Summarized {
		folded = append(folded, sum.Folded...)
		if (s.calls[i].prior == "") != (i == 0) || s.calls[i].max != cfg.SummaryTokens {
			t.Errorf("call %d: prior %.30q, max %d", i, s.calls[i].prior, s.calls[i].max)
		}
		if sum.After >= sum.Before {
			t.Errorf("summarization %d: %d tokens before, %d after; want fewer", i, sum.Before, sum.After)
		}
	}
	for i, id := range folded {
		if ids[i].ID != id {
			t.Fatalf("folded %v, want the oldest entries in order", folded)
		}
	}
	rest := h.Entries()
	if len(rest)+len(folded) != len(ids) || rest[0].Message.Role == llm.RoleTool {
		t.Errorf("%d entries left beside %d folded of %d, first %s: want whole steps folded", len(rest), len(folded), len(ids), rest[0].Message.Role)
	}
	if steps := h.Steps(); steps < cfg.Recent {
		t.Errorf("%d steps left, want the recent window of %d kept", steps, cfg.Recent)
	}
	// The summary sits right after the preamble and says how many steps it holds.
	text, ok := h.Summary()
	if !ok || p.Messages[2].Content != text || !strings.Contains(text, "Summary of the first") {
		t.Errorf("summary %q (%v), request's third message %.60q", text, ok, p.Messages[2].Content)
	}
	rs := session(t)
	checkSequence(t, p.Messages, []llm.Message{rs[0].message(), rs[1].message()})
	if m.Counts().Summaries != len(s.calls) {
		t.Errorf("Counts().Summaries = %d, want %d", m.Counts().Summaries, len(s.calls))
	}
}

func TestSummarizerFailureIsReturned(t *testing.T) {
	h := replay(t, -1)
	boom := errors.New("endpoint down")
	m, err := contextmgr.New(contextmgr.Config{Tier: contextmgr.T3, Budget: h.Tokens(), Soft: 10, Recent: 1, SummaryTokens: 50}, &recordingSummarizer{fail: boom})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prepare(context.Background(), h, 0); !errors.Is(err, boom) {
		t.Errorf("Prepare = %v, want the summarizer's error", err)
	}
	if _, err := contextmgr.New(contextmgr.Config{Tier: contextmgr.T4, Budget: 10, Soft: 5, Hard: 8, Recent: 1, Bulky: 1, SummaryTokens: 1}, nil); !errors.Is(err, contextmgr.ErrConfig) {
		t.Errorf("New(T4 without summarizer) = %v, want ErrConfig", err)
	}
}

// T4 is staged: nothing below Soft; elision alone between Soft and Hard; summarization too
// only when elision leaves the request above Hard.
func TestT4Staged(t *testing.T) {
	full := replay(t, -1)
	n := full.Tokens()
	ids, sizes := bulkyMiddle(full, 3, 200)
	elidable := 0
	for _, id := range ids {
		elidable += sizes[id]
	}
	for _, tt := range []struct {
		name                     string
		soft, hard               int
		wantElide, wantSummarize bool
	}{
		{"below soft", n, n, false, false},
		{"above soft, elision enough", n - 1, n - 1, true, false},
		// Elision leaves stubs, so it cannot bring the history under half of what it is
		// without the bulky bodies.
		{"elision not enough for hard", (n - elidable) / 2, (n - elidable) / 2, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := replay(t, -1)
			s := &recordingSummarizer{}
			m, err := contextmgr.New(contextmgr.Config{Tier: contextmgr.T4, Budget: n, Soft: tt.soft, Hard: min(tt.hard, n), Recent: 3, Bulky: 200, SummaryTokens: 200}, s)
			if err != nil {
				t.Fatal(err)
			}
			p, err := m.Prepare(context.Background(), h, 0)
			if err != nil {
				t.Fatal(err)
			}
			if (p.Elided != nil) != tt.wantElide || (len(p.Summarized) > 0) != tt.wantSummarize {
				t.Errorf("elided %v, summarized %d; want elision %v, summarization %v", p.Elided, len(p.Summarized), tt.wantElide, tt.wantSummarize)
			}
		})
	}
}

// Under T1–T4 no request ever exceeds the window while the history grows, across budgets and
// random sessions; under T0 the first request over it overflows. The sessions are the recorded
// one's messages repeated with seeded variation of the observations' sizes.
func TestWindowNeverExceeded(t *testing.T) {
	rs := session(t)
	for _, tier := range contextmgr.Tiers {
		for _, budget := range []int{1500, 3000, 6000} {
			for seed := uint64(1); seed <= 5; seed++ {
				t.Run(fmt.Sprintf("%s/%d/%d", tier, budget, seed), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 7))
					cfg := contextmgr.Preset(tier, budget)
					cfg.SummaryTokens = 150
					s := &recordingSummarizer{words: 3}
					m, err := contextmgr.New(cfg, s)
					if err != nil {
						t.Fatal(err)
					}
					pre := []llm.Message{rs[0].message(), rs[1].message()}
					h := contextmgr.NewHistory(contextmgr.BPE(), pre...)
					fixed := 50 + contextmgr.ToolTokens(contextmgr.BPE(), m.Tools())
					for round := 0; round < 4; round++ {
						for _, r := range rs[2 : len(rs)-1] {
							msg := r.message()
							if msg.Role == llm.RoleTool {
								// Cut the observation to a random share, so sizes vary.
								lines := strings.SplitAfter(msg.Content, "\n")
								msg.Content = strings.Join(lines[:rng.IntN(len(lines))+1], "")
							}
							if msg.Role == llm.RoleAssistant {
								for i := range msg.ToolCalls {
									msg.ToolCalls[i].ID = fmt.Sprintf("%s-%d", msg.ToolCalls[i].ID, round)
								}
							} else if msg.Role == llm.RoleTool {
								msg.ToolCallID = fmt.Sprintf("%s-%d", msg.ToolCallID, round)
							}
							if err := h.Add(fmt.Sprintf("%s-%d", r.ID, round), msg, r.Tool); err != nil {
								t.Fatal(err)
							}
							if msg.Role != llm.RoleTool {
								continue // a request is sent after each observation
							}
							need := h.Tokens() + fixed
							p, err := m.Prepare(context.Background(), h, fixed)
							var oe *contextmgr.OverflowError
							if tier == contextmgr.T0 {
								if (need > budget) != errors.As(err, &oe) {
									t.Fatalf("T0 with %d needed of %d: %v", need, budget, err)
								}
								if err != nil {
									return
								}
							} else if err != nil {
								// A managed tier overflows only when the preamble and the last
								// step, cut as far as it can be, alone do not fit.
								if !errors.As(err, &oe) || oe.Reason != contextmgr.ReasonPreamble {
									t.Fatalf("%s overflowed at round %d, %s: %v (last step alone %d tokens, all elided %v)", tier, round, r.ID, err, lastStep(h), allElided(h))
								}
								return
							}
							if p.Tokens > budget || p.Tokens != h.Tokens()+fixed {
								t.Fatalf("request of %d tokens (history %d + %d fixed), budget %d", p.Tokens, h.Tokens(), fixed, budget)
							}
							checkSequence(t, p.Messages, pre)
						}
					}
					if tier == contextmgr.T0 && budget < 6000 {
						t.Errorf("T0 never overflowed a window of %d", budget)
					}
					if c := m.Counts(); c.Peak > budget {
						t.Errorf("peak %d over budget %d", c.Peak, budget)
					}
				})
			}
		}
	}
}

func allElided(h *contextmgr.History) bool {
	for _, e := range h.Entries() {
		if e.Message.Role == llm.RoleTool && !e.Elided && e.Tokens > 60 { // a stub costs about 40
			return false
		}
	}
	return true
}

func lastStep(h *contextmgr.History) int {
	es := h.Entries()
	n := 0
	for i := len(es) - 1; i >= 0; i-- {
		n += es[i].Tokens
		if es[i].Message.Role != llm.RoleTool {
			break
		}
	}
	return n
}

// An observation of the last step too big for the window is cut to fit, head and tail kept,
// and under recall stored whole; a managed tier overflows only when the preamble and the cut
// last step still do not fit.
func TestLastObservationTrimmed(t *testing.T) {
	rs := session(t)
	for _, tier := range []contextmgr.Tier{contextmgr.T1, contextmgr.T2, contextmgr.T3, contextmgr.T4} {
		h := replay(t, 4) // the preamble, then a test run and its 40-case log
		whole := rs[3].Content
		m, err := contextmgr.New(contextmgr.Preset(tier, 400), &recordingSummarizer{})
		if err != nil {
			t.Fatal(err)
		}
		if h.Tokens() <= 400 {
			t.Fatalf("the step fits (%d tokens): the test needs a bigger one", h.Tokens())
		}
		p, err := m.Prepare(context.Background(), h, 0)
		if err != nil || p.Tokens > 400 || fmt.Sprint(p.Trimmed) != "[o1]" {
			t.Fatalf("%s: Prepare = %d tokens, trimmed %v, %v; want o1 cut to fit 400", tier, p.Tokens, p.Trimmed, err)
		}
		cut := p.Messages[len(p.Messages)-1].Content
		if !strings.HasPrefix(cut, whole[:20]) || !strings.HasSuffix(cut, whole[len(whole)-20:]) || !strings.Contains(cut, "cut to fit") {
			t.Errorf("%s: cut observation %q: want its head, a marker and its tail", tier, cut)
		}
		body, err := m.Recall("o1")
		if tier.Recalls() != (err == nil && body == whole) {
			t.Errorf("%s: Recall(o1) = %.20q, %v; want the whole body exactly under recall tiers", tier, body, err)
		}
		small, err := contextmgr.New(contextmgr.Preset(tier, 50), &recordingSummarizer{})
		if err != nil {
			t.Fatal(err)
		}
		var oe *contextmgr.OverflowError
		if _, err := small.Prepare(context.Background(), replay(t, 4), 0); !errors.As(err, &oe) || oe.Tier != tier || oe.Budget != 50 {
			t.Errorf("%s: Prepare(preamble over the window) = %v, want an OverflowError against 50", tier, err)
		}
	}
}

func TestObserveCorrectsEstimates(t *testing.T) {
	h := replay(t, -1)
	n := h.Tokens()
	m, err := contextmgr.New(contextmgr.Config{Tier: contextmgr.T0, Budget: n + n/2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prepare(context.Background(), h, 0); err != nil {
		t.Fatal(err)
	}
	m.Observe(n, n*2) // the endpoint counts twice as many: the request no longer fits
	if _, err := m.Prepare(context.Background(), h, 0); !errors.Is(err, contextmgr.ErrOverflow) {
		t.Errorf("Prepare after Observe(n, 2n) = %v, want overflow", err)
	}
	m.Observe(n, 0) // no usage reported: no change
	m.Observe(2*n, n)
	if p, err := m.Prepare(context.Background(), h, 0); err != nil || p.Tokens != n {
		t.Errorf("Prepare after the ratio came back to 1 = %d, %v; want %d", p.Tokens, err, n)
	}
}

func TestConfigValidate(t *testing.T) {
	good := contextmgr.Preset(contextmgr.T4, 1000)
	if err := good.Validate(); err != nil {
		t.Fatalf("Preset(T4, 1000).Validate() = %v", err)
	}
	for _, tt := range []struct {
		name string
		edit func(*contextmgr.Config)
	}{
		{"budget", func(c *contextmgr.Config) { c.Budget = 0 }},
		{"soft over budget", func(c *contextmgr.Config) { c.Soft = 1001 }},
		{"hard under soft", func(c *contextmgr.Config) { c.Hard = c.Soft - 1 }},
		{"recent", func(c *contextmgr.Config) { c.Recent = 0 }},
		{"bulky", func(c *contextmgr.Config) { c.Bulky = 0 }},
		{"tier", func(c *contextmgr.Config) { c.Tier = 9 }},
	} {
		c := good
		tt.edit(&c)
		if err := c.Validate(); !errors.Is(err, contextmgr.ErrConfig) {
			t.Errorf("%s: Validate() = %v, want ErrConfig", tt.name, err)
		}
	}
	for _, tt := range []struct {
		give string
		want contextmgr.Tier
		ok   bool
	}{{"T0", contextmgr.T0, true}, {"t4", contextmgr.T4, true}, {"T5", 0, false}, {"", 0, false}} {
		got, err := contextmgr.ParseTier(tt.give)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseTier(%q) = %v, %v", tt.give, got, err)
		}
	}
}
