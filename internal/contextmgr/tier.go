package contextmgr

import "fmt"

// Tier is a preset of context-management mechanisms.
type Tier int

// The tiers, T0 to T4.
const (
	T0 Tier = iota // none: the history grows until it overflows
	T1             // M1 elision
	T2             // M1 elision + M2 recall
	T3             // M3 summarization
	T4             // M1 + M2 + M3, staged at the soft and hard thresholds
)

// Tiers lists every tier in order.
var Tiers = []Tier{T0, T1, T2, T3, T4}

func (t Tier) String() string {
	if t < T0 || t > T4 {
		return fmt.Sprintf("Tier(%d)", int(t))
	}
	return fmt.Sprintf("T%d", int(t))
}

// ParseTier reads "T0" … "T4" (or "t0" … "t4").
func ParseTier(s string) (Tier, error) {
	for _, t := range Tiers {
		if s == t.String() || (len(s) == 2 && s[0] == 't' && s[1] == t.String()[1]) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: tier %q is not one of T0, T1, T2, T3, T4", ErrConfig, s)
}

// Elides reports whether the tier uses M1.
func (t Tier) Elides() bool { return t == T1 || t == T2 || t == T4 }

// Recalls reports whether the tier uses M2 (elided bodies stored, recall_event offered).
func (t Tier) Recalls() bool { return t == T2 || t == T4 }

// Summarizes reports whether the tier uses M3.
func (t Tier) Summarizes() bool { return t == T3 || t == T4 }

// Config sets a Manager's tier and its limits, in tokens.
type Config struct {
	Tier Tier
	// Budget is the context window: no request may cost more.
	Budget int
	// Soft (B₁) is the threshold above which elision (T1, T2, T4) or summarization (T3) acts;
	// Hard (B₂), T4 only, the one above which T4 also summarizes. 0 < Soft ≤ Hard ≤ Budget.
	Soft, Hard int
	// Recent is the number of last steps kept verbatim (the recent window); at least 1.
	Recent int
	// Bulky is the size from which an observation is bulky (elided at Soft); at least 1.
	Bulky int
	// SummaryTokens caps the completion of a summarization call.
	SummaryTokens int
}

// Preset returns the configuration of tier t for a context window of budget tokens: Soft at
// 60% and Hard at 85% of it, the last 3 steps kept, observations of 200 tokens or more bulky,
// summaries of at most a tenth of the window (256 tokens at least).
func Preset(t Tier, budget int) Config {
	return Config{
		Tier:          t,
		Budget:        budget,
		Soft:          budget * 60 / 100,
		Hard:          budget * 85 / 100,
		Recent:        3,
		Bulky:         200,
		SummaryTokens: max(256, budget/10),
	}
}

// Validate reports the first limit out of its range.
func (c Config) Validate() error {
	switch {
	case c.Tier < T0 || c.Tier > T4:
		return fmt.Errorf("%w: tier %d", ErrConfig, int(c.Tier))
	case c.Budget <= 0:
		return fmt.Errorf("%w: budget %d must be positive", ErrConfig, c.Budget)
	case c.Tier != T0 && (c.Soft <= 0 || c.Soft > c.Budget):
		return fmt.Errorf("%w: soft threshold %d must be in (0, budget %d]", ErrConfig, c.Soft, c.Budget)
	case c.Tier == T4 && (c.Hard < c.Soft || c.Hard > c.Budget):
		return fmt.Errorf("%w: hard threshold %d must be in [soft %d, budget %d]", ErrConfig, c.Hard, c.Soft, c.Budget)
	case c.Tier != T0 && c.Recent < 1:
		return fmt.Errorf("%w: recent window %d must be at least 1 step", ErrConfig, c.Recent)
	case c.Tier.Elides() && c.Bulky < 1:
		return fmt.Errorf("%w: bulky size %d must be at least 1 token", ErrConfig, c.Bulky)
	case c.Tier.Summarizes() && c.SummaryTokens < 1:
		return fmt.Errorf("%w: summary tokens %d must be at least 1", ErrConfig, c.SummaryTokens)
	}
	return nil
}
