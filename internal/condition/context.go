package condition

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Context-management tiers (package contextmgr implements them): T0 none (the history grows
// until the window overflows), T1 elision, T2 elision and recall, T3 summarization, T4 the
// three staged at the soft and hard thresholds.
var Tiers = []string{"T0", "T1", "T2", "T3", "T4"}

// Context is how a coding run's conversation is kept within the model's context window, in
// tokens. Tier "" leaves it unmanaged: no window, nothing elided or summarized. Soft (B₁),
// Hard (B₂), Recent (the steps kept verbatim) and Bulky (the size from which an observation
// is bulky) are the tier's limits; 0 takes the tier's preset for the budget (contextmgr.Preset).
type Context struct {
	Tier   string `json:"tier,omitempty"`
	Budget int    `json:"budget,omitempty"`
	Soft   int    `json:"soft,omitempty"`
	Hard   int    `json:"hard,omitempty"`
	Recent int    `json:"recent,omitempty"`
	Bulky  int    `json:"bulky,omitempty"`
}

// Managed reports whether a tier is set.
func (c Context) Managed() bool { return c.Tier != "" }

// Validate reports the first setting out of its range. The thresholds' order against each
// other (Soft ≤ Hard ≤ Budget once the presets fill the zeros) is checked where the presets
// are known, by the harness.
func (c Context) Validate() error {
	switch {
	case c == Context{}:
		return nil
	case !slices.Contains(Tiers, c.Tier):
		return fmt.Errorf("%w: tier %q is not one of %s", ErrContext, c.Tier, strings.Join(Tiers, ", "))
	case c.Budget <= 0:
		return fmt.Errorf("%w: budget %d must be positive", ErrContext, c.Budget)
	case c.Soft < 0 || c.Hard < 0 || c.Recent < 0 || c.Bulky < 0:
		return fmt.Errorf("%w: negative limit", ErrContext)
	case c.Soft > c.Budget || c.Hard > c.Budget:
		return fmt.Errorf("%w: a threshold above the budget %d", ErrContext, c.Budget)
	case c.Soft != 0 && c.Hard != 0 && c.Hard < c.Soft:
		return fmt.Errorf("%w: hard threshold %d below the soft one %d", ErrContext, c.Hard, c.Soft)
	}
	return nil
}

// Preset returns the context-management preset of a tier at a budget, as a condition term
// names it: "t4_8k" is T4 with a window of 8000 tokens, "t0_12000" T0 with 12000.
func Preset(tier string, budget int) (Context, error) {
	c := Context{Tier: tier, Budget: budget}
	return c, c.Validate()
}

// Term returns the condition term of c's tier and budget ("t4_8k"); its other limits are not
// part of it.
func (c Context) Term() string {
	b := strconv.Itoa(c.Budget)
	if c.Budget%1000 == 0 {
		b = strconv.Itoa(c.Budget/1000) + "k"
	}
	return strings.ToLower(c.Tier) + "_" + b
}

// ParseContext reads a context term: "t" and a tier digit, "_", and the budget in tokens,
// with an optional k for thousands ("t2_8k", "t0_12000").
func ParseContext(term string) (Context, error) {
	c, ok, err := parseContextTerm(term)
	if !ok && err == nil {
		return Context{}, fmt.Errorf("%w: %q is not a context term (such as t2_8k)", ErrUnknown, term)
	}
	return c, err
}

// parseContextTerm reports ok when term has the form of a context term, with its error if the
// values are out of range.
func parseContextTerm(term string) (Context, bool, error) {
	if len(term) < 4 || term[0] != 't' || term[1] < '0' || term[1] > '9' || term[2] != '_' {
		return Context{}, false, nil
	}
	num, mult := term[3:], 1
	if rest, ok := strings.CutSuffix(num, "k"); ok {
		num, mult = rest, 1000
	}
	n, err := strconv.Atoi(num)
	if err != nil || num == "" || num[0] < '0' || num[0] > '9' {
		return Context{}, false, nil
	}
	c, err := Preset("T"+term[1:2], n*mult)
	return c, true, err
}
