package contextmgr

import (
	"context"
	"fmt"
	"math"

	"github.com/dittolab/ditto/internal/llm"
)

// Manager applies one Config to one run's History before each request. It is not safe for
// concurrent use: one run owns it.
type Manager struct {
	cfg   Config
	sum   Summarizer
	store *Store
	// scale corrects the Counter's estimates to the endpoint's counts (Observe).
	scale  float64
	counts Counts
}

// Counts are a run's context-management figures so far.
type Counts struct {
	// Elisions counts the Prepares that elided; Elided the observations and tool-call
	// arguments replaced by stubs in all; Dropped the messages dropped whole (a running summary
	// dropped counts as one).
	Elisions, Elided, Dropped int
	// Summaries counts summarization calls; Recalls recall_event calls answered.
	Summaries, Recalls int
	// Peak is the largest request Prepare returned, in estimated tokens.
	Peak int
}

// New returns a Manager for cfg. A tier that summarizes needs s; the others ignore it.
func New(cfg Config, s Summarizer) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Tier.Summarizes() && s == nil {
		return nil, fmt.Errorf("%w: %s summarizes and no summarizer was given", ErrConfig, cfg.Tier)
	}
	m := &Manager{cfg: cfg, sum: s, scale: 1}
	if cfg.Tier.Recalls() {
		m.store = newStore()
	}
	return m, nil
}

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Counts returns the run's figures so far.
func (m *Manager) Counts() Counts { return m.counts }

// Tools returns the tools the tier adds to the task's: recall_event under T2 and T4.
func (m *Manager) Tools() []llm.ToolDef {
	if m.store == nil {
		return nil
	}
	return []llm.ToolDef{RecallTool()}
}

// Recall answers a recall_event call: the body stored under id.
func (m *Manager) Recall(id string) (string, error) {
	if m.store == nil {
		return "", fmt.Errorf("%w: %s does not recall", ErrNotStored, m.cfg.Tier)
	}
	body, err := m.store.Recall(id)
	if err == nil {
		m.counts.Recalls++
	}
	return body, err
}

// Observe corrects later estimates with the endpoint's count of a request whose estimate was
// estimated (as Prepared.Tokens said): the ratio reported/estimated, kept within [0.5, 2] so
// one odd answer cannot unbalance the budget. A zero report (endpoints that give no usage)
// leaves the estimates as they are.
func (m *Manager) Observe(estimated, reported int) {
	if estimated <= 0 || reported <= 0 {
		return
	}
	m.scale = min(2, max(0.5, m.scale*float64(reported)/float64(estimated)))
}

// estimate is the corrected token count of n counted tokens.
func (m *Manager) estimate(n int) int { return int(math.Ceil(float64(n) * m.scale)) }

// Prepared is the next request's messages and what the manager did to make them.
type Prepared struct {
	Messages []llm.Message
	// Tokens is the request's estimated cost, fixed tokens included; at most Config.Budget.
	Tokens int
	// Elided is nil unless observations or arguments were elided, or steps dropped.
	Elided *Elision
	// Summarized lists the summarization calls made, in order.
	Summarized []Summarization
	// Trimmed lists the observations of the last step that had to be cut to fit (their head
	// and tail kept, the whole body stored under recall tiers): the last resort of a managed
	// tier when everything before the last step is already elided or summarized.
	Trimmed []string
	// Recent is the recent window this request kept verbatim: Config.Recent, or fewer when the
	// manager had to shrink it to fit the budget.
	Recent int
}

// Prepare makes room in h, as the tier says, for a request of h's messages plus fixed tokens
// (tools offered, an appended plan, the completion reserved), and returns the request's
// messages. It returns *OverflowError when the request cannot fit Config.Budget, and a
// summarizer's error as it is; h may have been changed by then (what was elided or folded
// stays so).
func (m *Manager) Prepare(ctx context.Context, h *History, fixed int) (Prepared, error) {
	need := func() int { return m.estimate(h.Tokens() + fixed) }
	p := Prepared{Recent: m.cfg.Recent}
	el := &Elision{}
	var err error
	if m.cfg.Tier != T0 {
		err = m.manage(ctx, h, fixed, need, &p, el)
	}
	if !el.empty() {
		p.Elided = el
		m.counts.Elisions++
		m.counts.Elided += len(el.IDs) + len(el.Arguments)
		m.counts.Dropped += len(el.Dropped)
	}
	if err != nil {
		return p, err
	}
	if n := need(); n > m.cfg.Budget {
		return p, m.overflow(h, fixed, n)
	}
	p.Messages, p.Tokens = h.Messages(), need()
	m.counts.Peak = max(m.counts.Peak, p.Tokens)
	return p, nil
}

// manage applies the thresholds, then makes the request fit if it still does not.
func (m *Manager) manage(ctx context.Context, h *History, fixed int, need func() int, p *Prepared, el *Elision) error {
	c := m.cfg
	if c.Tier.Elides() && need() > c.Soft {
		h.elide(c.Recent, c.Bulky, m.store, el)
	}
	switch {
	case c.Tier == T3 && need() > c.Soft:
		if err := m.summarize(ctx, h, c.Recent, c.Soft, need, p); err != nil {
			return err
		}
	case c.Tier == T4 && need() > c.Hard:
		if err := m.summarize(ctx, h, c.Recent, c.Hard, need, p); err != nil {
			return err
		}
	}
	// The thresholds were not enough: act on the whole middle region, then widen it.
	for recent := c.Recent; need() > c.Budget; recent-- {
		p.Recent = recent
		if c.Tier.Elides() {
			h.elide(recent, 1, m.store, el)
		}
		if c.Tier.Summarizes() && need() > c.Budget {
			if err := m.summarize(ctx, h, recent, c.Budget, need, p); err != nil {
				return err
			}
		}
		if recent == 1 {
			break
		}
	}
	// Still too much, and the last step cut as far as it can be would not make it fit: what is
	// left of the middle region (stubs, the model's messages, small observations) is dropped,
	// oldest step first, then the running summary.
	recall := m.store != nil
	least := func() int { return m.estimate(h.Tokens() - h.lastCuts(recall) + fixed) }
	for need() > c.Budget && least() > c.Budget {
		if ids := h.drop(); len(ids) > 0 {
			el.Dropped = append(el.Dropped, ids...)
			continue
		}
		if id := h.dropSummary(); id != "" {
			el.Dropped = append(el.Dropped, id)
			continue
		}
		break
	}
	// Then the last step's observations are cut to fit.
	for need() > c.Budget {
		before := h.Tokens()
		h.trim(int(math.Ceil(float64(need()-c.Budget)/m.scale)), m.store, &p.Trimmed)
		if h.Tokens() == before {
			break
		}
	}
	return nil
}

// overflow is the error of a request of needed tokens that does not fit: under a managed tier
// it says whether the preamble, the fixed tokens and the last step cut as far as it can be
// are alone over the budget.
func (m *Manager) overflow(h *History, fixed, needed int) *OverflowError {
	e := &OverflowError{Tier: m.cfg.Tier, Needed: needed, Budget: m.cfg.Budget, Reason: ReasonUnmanaged}
	if m.cfg.Tier != T0 {
		e.Floor = m.estimate(h.floor(m.store != nil) + fixed)
		e.Reason = ReasonTier
		if e.Floor > m.cfg.Budget {
			e.Reason = ReasonPreamble
		}
	}
	return e
}

// summarize folds the oldest middle steps (the recent window being the last recent) until the
// request fits target or the middle region is empty. Each call folds the fewest oldest steps
// whose tokens cover the excess plus a summary's size.
func (m *Manager) summarize(ctx context.Context, h *History, recent, target int, need func() int, p *Prepared) error {
	for need() > target {
		middle := h.middle(recent)
		if len(middle) == 0 {
			return nil
		}
		excess := need() - target + m.estimate(m.cfg.SummaryTokens)
		k, freed := 0, 0
		for k < len(middle) && m.estimate(freed) < excess {
			for i := middle[k].start; i < middle[k].end; i++ {
				freed += h.entries[i].Tokens
			}
			k++
		}
		s, err := h.fold(ctx, m.sum, k, m.cfg.SummaryTokens)
		if err != nil {
			return err
		}
		m.counts.Summaries++
		p.Summarized = append(p.Summarized, s)
	}
	return nil
}
