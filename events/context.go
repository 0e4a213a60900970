package events

import (
	"fmt"
	"slices"
)

// Event types of context management and planning in coding runs: what the harness did to the
// conversation so that each request fits the model's context window, and the plan the model
// keeps with its update_plan tool.
const (
	TypeContextConfigured Type = "context.configured"
	TypeContextPrepared   Type = "context.prepared"
	TypeContextElided     Type = "context.elided"
	TypeContextRecalled   Type = "context.recalled"
	TypeContextSummarized Type = "context.summarized"
	TypeContextOverflowed Type = "context.overflowed"
	TypePlanUpdated       Type = "plan.updated"
)

// ComponentUpdatePlan is the planning component of coding runs (RunStarted.Components): the
// update_plan tool, a first-turn reminder to make a plan, and the current plan appended to each
// request's input without being stored in the history.
const ComponentUpdatePlan = "update_plan"

// PurposeSummarize marks the model.called of a summarization call (context management's M3),
// a model call of its own beside the agent's ("act") calls.
const PurposeSummarize = "summarize"

// Context-management tiers (ContextConfigured.Tier).
var ContextTiers = []string{"T0", "T1", "T2", "T3", "T4"}

// ContextConfigured records how a run's context is managed: the tier, the context window
// (Budget) and the tier's limits, all in tokens. It comes before any other context event; a run
// without it is not managed (no budget, nothing elided).
type ContextConfigured struct {
	Tier          string `json:"tier"`
	Budget        int    `json:"budget"`
	Soft          int    `json:"soft,omitempty"` // B₁: elision (T1, T2, T4) or summarization (T3) above it
	Hard          int    `json:"hard,omitempty"` // B₂ (T4): summarization above it too
	Recent        int    `json:"recent,omitempty"`
	Bulky         int    `json:"bulky,omitempty"`
	SummaryTokens int    `json:"summary_tokens,omitempty"`
}

// ContextPrepared records one request the agent was sent: its estimated size in tokens (the
// messages plus the tools offered, an appended plan and the completion reserved), which never
// exceeds Budget, the number of messages, and the recent window kept verbatim. Turn is the
// model call's number in the run, from 1.
type ContextPrepared struct {
	Turn     int `json:"turn"`
	Tokens   int `json:"tokens"`
	Budget   int `json:"budget"`
	Messages int `json:"messages"`
	Recent   int `json:"recent,omitempty"`
}

// ContextElided records what context management took out of the conversation before a request:
// IDs, the observations replaced by stubs (M1: tool results, and messages the harness wrote such
// as verifications), in history order; Arguments, the tool-call arguments replaced by stubs
// (the id of the assistant message, a dot and the call's index from 0); Saved, the tokens the
// stubs saved. The managed tiers' last resorts: Dropped, the messages of the oldest steps
// dropped whole when even their stubs did not fit (and the running summary's id when it was
// dropped too); Trimmed, observations of the last step cut to fit (their head and tail kept).
type ContextElided struct {
	Turn      int      `json:"turn"`
	IDs       []string `json:"ids"`
	Arguments []string `json:"arguments,omitempty"`
	Saved     int      `json:"tokens_saved"`
	Dropped   []string `json:"dropped,omitempty"`
	Trimmed   []string `json:"trimmed,omitempty"`
}

// ContextRecalled records a recall_event call answered (M2): the elided observation's id and
// the tokens of the body given back.
type ContextRecalled struct {
	CallID string `json:"call_id"`
	ID     string `json:"id"`
	Tokens int    `json:"tokens"`
}

// ContextSummarized records one summarization (M3): the ids of the messages folded into the
// running summary, the steps they made, the history's tokens before and after, and the new
// summary's. It follows the model.called (purpose summarize) of the call that wrote the summary.
type ContextSummarized struct {
	Turn          int      `json:"turn"`
	Folded        []string `json:"folded"`
	Steps         int      `json:"steps"`
	Before        int      `json:"tokens_before"`
	After         int      `json:"tokens_after"`
	SummaryTokens int      `json:"summary_tokens"`
}

// ContextOverflowed records a request that could not fit the context window: the tokens it
// needed against the budget, and why (Reason: OverflowUnmanaged under T0; under a managed tier
// OverflowPreamble when the preamble, tools, completion reserved and the last step cut as far as
// it can be alone need Floor tokens, more than the budget, or OverflowTier when they did not
// and the tier still failed). The run then ends with status overflow.
type ContextOverflowed struct {
	Turn   int    `json:"turn"`
	Tier   string `json:"tier"`
	Needed int    `json:"needed"`
	Budget int    `json:"budget"`
	Reason string `json:"reason,omitempty"`
	Floor  int    `json:"floor,omitempty"`
}

// Why a request overflowed (ContextOverflowed.Reason).
const (
	OverflowUnmanaged = "unmanaged"
	OverflowPreamble  = "preamble"
	OverflowTier      = "tier"
)

// PlanUpdated records a valid update_plan call: the plan as the model now keeps it.
type PlanUpdated struct {
	CallID      string       `json:"call_id"`
	Explanation string       `json:"explanation,omitempty"`
	Steps       []PlanUpdate `json:"plan"`
}

// PlanUpdate is one step of an updated plan with its status (pending, in_progress, completed).
type PlanUpdate struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

func (ContextConfigured) EventType() Type { return TypeContextConfigured }
func (ContextPrepared) EventType() Type   { return TypeContextPrepared }
func (ContextElided) EventType() Type     { return TypeContextElided }
func (ContextRecalled) EventType() Type   { return TypeContextRecalled }
func (ContextSummarized) EventType() Type { return TypeContextSummarized }
func (ContextOverflowed) EventType() Type { return TypeContextOverflowed }
func (PlanUpdated) EventType() Type       { return TypePlanUpdated }

func checkTier(field, tier string) error {
	if tier == "" {
		return missing(field)
	}
	if !slices.Contains(ContextTiers, tier) {
		return invalid(field, "%q is not one of %v", tier, ContextTiers)
	}
	return nil
}

func (p ContextConfigured) Validate() error {
	if err := checkTier("payload.tier", p.Tier); err != nil {
		return err
	}
	switch {
	case p.Budget <= 0:
		return invalid("payload.budget", "must be positive, got %d", p.Budget)
	case p.Soft < 0 || p.Hard < 0 || p.Recent < 0 || p.Bulky < 0 || p.SummaryTokens < 0:
		return invalid("payload", "negative limit")
	case p.Soft > p.Budget || p.Hard > p.Budget:
		return invalid("payload", "a threshold above the budget %d", p.Budget)
	}
	return nil
}

func (p ContextPrepared) Validate() error {
	switch {
	case p.Turn < 1:
		return invalid("payload.turn", "must be at least 1, got %d", p.Turn)
	case p.Budget <= 0:
		return invalid("payload.budget", "must be positive, got %d", p.Budget)
	case p.Tokens < 0 || p.Messages < 0 || p.Recent < 0:
		return invalid("payload", "negative count")
	case p.Tokens > p.Budget:
		return invalid("payload.tokens", "%d is over the budget %d (a request that does not fit is context.overflowed)", p.Tokens, p.Budget)
	}
	return nil
}

func (p ContextElided) Validate() error {
	switch {
	case p.Turn < 1:
		return invalid("payload.turn", "must be at least 1, got %d", p.Turn)
	case p.IDs == nil:
		return missing("payload.ids")
	case len(p.IDs) == 0 && len(p.Arguments) == 0 && len(p.Dropped) == 0 && len(p.Trimmed) == 0:
		return invalid("payload", "nothing elided, dropped or trimmed")
	case p.Saved < 0:
		return invalid("payload.tokens_saved", "negative")
	}
	for _, f := range []struct {
		name string
		ids  []string
	}{{"ids", p.IDs}, {"arguments", p.Arguments}, {"dropped", p.Dropped}, {"trimmed", p.Trimmed}} {
		if i := slices.Index(f.ids, ""); i >= 0 {
			return missing(fmt.Sprintf("payload.%s[%d]", f.name, i))
		}
	}
	return nil
}

func (p ContextRecalled) Validate() error {
	switch {
	case p.CallID == "":
		return missing("payload.call_id")
	case p.ID == "":
		return missing("payload.id")
	case p.Tokens < 0:
		return invalid("payload.tokens", "negative")
	}
	return nil
}

func (p ContextSummarized) Validate() error {
	switch {
	case p.Turn < 1:
		return invalid("payload.turn", "must be at least 1, got %d", p.Turn)
	case len(p.Folded) == 0:
		return missing("payload.folded")
	case p.Steps < 1:
		return invalid("payload.steps", "must be at least 1, got %d", p.Steps)
	case p.Before < 0 || p.After < 0 || p.SummaryTokens < 0:
		return invalid("payload", "negative token count")
	}
	return nil
}

func (p ContextOverflowed) Validate() error {
	if err := checkTier("payload.tier", p.Tier); err != nil {
		return err
	}
	switch {
	case p.Turn < 1:
		return invalid("payload.turn", "must be at least 1, got %d", p.Turn)
	case p.Budget <= 0:
		return invalid("payload.budget", "must be positive, got %d", p.Budget)
	case p.Needed <= p.Budget:
		return invalid("payload.needed", "%d fits the budget %d", p.Needed, p.Budget)
	case p.Reason != "" && !slices.Contains([]string{OverflowUnmanaged, OverflowPreamble, OverflowTier}, p.Reason):
		return invalid("payload.reason", "%q is not %s, %s or %s", p.Reason, OverflowUnmanaged, OverflowPreamble, OverflowTier)
	case (p.Reason == OverflowUnmanaged) != (p.Tier == "T0") && p.Reason != "":
		return invalid("payload.reason", "%q under tier %s (unmanaged is T0's, and T0's only)", p.Reason, p.Tier)
	case p.Floor < 0:
		return invalid("payload.floor", "negative")
	case p.Reason == OverflowPreamble && p.Floor <= p.Budget:
		return invalid("payload.floor", "%d fits the budget %d, so the reason is not %s", p.Floor, p.Budget, OverflowPreamble)
	}
	return nil
}

func (p PlanUpdated) Validate() error {
	switch {
	case p.CallID == "":
		return missing("payload.call_id")
	case len(p.Steps) == 0:
		return missing("payload.plan")
	}
	for i, s := range p.Steps {
		switch {
		case s.Step == "":
			return missing(fmt.Sprintf("payload.plan[%d].step", i))
		case s.Status != "pending" && s.Status != "in_progress" && s.Status != "completed":
			return invalid(fmt.Sprintf("payload.plan[%d].status", i), "%q is not pending, in_progress or completed", s.Status)
		}
	}
	return nil
}

// ContextFold is the fold of a run's context-management and planning events.
type ContextFold struct {
	// Configured is the run's context configuration (nil: the context is not managed).
	Configured *ContextConfigured
	// Turns counts the requests prepared; Peak is the largest, in tokens.
	Turns, Peak int
	// Elisions counts the requests before which context management took something out
	// (context.elided), Elided the observations and tool-call arguments replaced by stubs in
	// all (M1), Arguments the arguments among them, Saved the tokens the stubs saved, Dropped
	// the messages dropped whole, Trimmed the observations cut.
	Elisions, Elided, Arguments, Saved, Dropped, Trimmed int
	// Recalls counts the recall_event calls answered (M2); Summaries the summarizations (M3).
	Recalls, Summaries int
	// Overflow is the request that did not fit (nil when none did).
	Overflow *ContextOverflowed
	// PlanUpdates counts the valid update_plan calls.
	PlanUpdates int

	elided        map[string]bool // ids elided or trimmed so far: the ones recall_event may name
	lastSummarize bool            // the event before was a successful summarization call
}

// checkContext checks p against the context rules, without changing the run: the
// configuration comes first and once; a prepared request fits the configured budget; a recall
// names an observation elided before and answers a pending call; a summary follows the
// summarization call that wrote it; nothing is prepared or called after an overflow, and the
// run then finishes with status overflow.
func (r *Run) checkContext(p Payload) error {
	c := &r.Context
	if c.Overflow != nil {
		switch p := p.(type) {
		case ModelCalled, ContextPrepared, ContextElided, ContextSummarized, ContextOverflowed:
			return fmt.Errorf("%s after the context overflowed", p.EventType())
		case RunFinished:
			if p.Status != StatusOverflow && p.Status != StatusAborted {
				return fmt.Errorf("finished with status %s after the context overflowed, want %s", p.Status, StatusOverflow)
			}
		}
	}
	switch p := p.(type) {
	case ContextConfigured:
		if c.Configured != nil {
			return fmt.Errorf("the context was already configured")
		}
		if c.Turns > 0 || c.Elisions > 0 || c.Summaries > 0 || c.Recalls > 0 {
			return fmt.Errorf("context configured after context events")
		}
	case ContextPrepared:
		if c.Configured != nil && p.Budget != c.Configured.Budget {
			return fmt.Errorf("request prepared for a budget of %d, configured %d", p.Budget, c.Configured.Budget)
		}
	case ContextRecalled:
		if !c.elided[p.ID] {
			return fmt.Errorf("recalled %s, which was not elided", p.ID)
		}
		if _, ok := r.pending[p.CallID]; !ok {
			return fmt.Errorf("recalled by call %s, which is not pending", p.CallID)
		}
	case ContextSummarized:
		if !c.lastSummarize {
			return fmt.Errorf("a summary without the summarization call (model.called, purpose %s) right before it", PurposeSummarize)
		}
	case ContextOverflowed:
		if c.Configured != nil && p.Budget != c.Configured.Budget {
			return fmt.Errorf("overflowed a budget of %d, configured %d", p.Budget, c.Configured.Budget)
		}
	case PlanUpdated:
		if _, ok := r.pending[p.CallID]; !ok {
			return fmt.Errorf("plan updated by call %s, which is not pending", p.CallID)
		}
	}
	return nil
}

// foldContext moves the context fold by p, which checkContext accepted.
func (r *Run) foldContext(p Payload) {
	c := &r.Context
	c.lastSummarize = false
	switch p := p.(type) {
	case ModelCalled:
		c.lastSummarize = p.Purpose == PurposeSummarize && p.Error == ""
	case ContextConfigured:
		c.Configured = &p
	case ContextPrepared:
		c.Turns++
		c.Peak = max(c.Peak, p.Tokens)
	case ContextElided:
		c.Elisions++
		c.Elided += len(p.IDs) + len(p.Arguments)
		c.Arguments += len(p.Arguments)
		c.Dropped += len(p.Dropped)
		c.Trimmed += len(p.Trimmed)
		c.Saved += p.Saved
		if c.elided == nil {
			c.elided = map[string]bool{}
		}
		for _, id := range p.IDs {
			c.elided[id] = true
		}
		for _, id := range p.Arguments {
			c.elided[id] = true
		}
		for _, id := range p.Trimmed {
			c.elided[id] = true
		}
	case ContextRecalled:
		c.Recalls++
	case ContextSummarized:
		c.Summaries++
	case ContextOverflowed:
		c.Overflow = &p
	case PlanUpdated:
		c.PlanUpdates++
	}
}
