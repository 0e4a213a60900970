package condition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dittolab/ditto/events"
)

// Components are the independently switchable harness components.
type Components struct {
	FSM                bool // finite-state execution
	ForcedTool         bool
	Validation         bool
	Retry              bool
	StructuredPlanning bool
	SchemaGate         bool
	PermissionGate     bool
	CircuitBreaker     bool

	// Coding runs (internal/coding): the action space, the diagnostics' form, test protection.
	BashOnly       bool // one bash tool instead of the file tools (read, list, search, edit, create)
	Distilled      bool // diagnostics go back distilled (tuples), not raw
	TestProtection bool // test files (*_test.go, testdata/) are read-only to the agent
	// Planning in coding runs: the update_plan tool, a first-turn reminder, the current plan
	// appended to each request and never stored in the history.
	PlanTool bool
}

// Limits bound the components. Zero fields take DefaultLimits' values.
type Limits struct {
	MaxRetries       int   // retries per state (retry); default 2
	MaxPlanReprompts int   // re-prompts after a rejected plan (structured_planning); default 2
	MaxRepairTurns   int   // consecutive repair turns (circuit_breaker); default 3
	TokenBudget      int64 // prompt+completion tokens per run (circuit_breaker); default 100000
	MaxSteps         int   // model turns after planning, in every condition; default 20
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxRetries: 2, MaxPlanReprompts: 2, MaxRepairTurns: 3, TokenBudget: 100_000, MaxSteps: 20}
}

// WithDefaults returns l with its zero fields set to DefaultLimits' values.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxRetries == 0 {
		l.MaxRetries = d.MaxRetries
	}
	if l.MaxPlanReprompts == 0 {
		l.MaxPlanReprompts = d.MaxPlanReprompts
	}
	if l.MaxRepairTurns == 0 {
		l.MaxRepairTurns = d.MaxRepairTurns
	}
	if l.TokenBudget == 0 {
		l.TokenBudget = d.TokenBudget
	}
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	return l
}

// Condition is a named set of components with their limits: what the harness runs a task
// under, and what a study's job carries.
type Condition struct {
	Name string
	Components
	Limits Limits
	// Context is how a coding run's conversation is kept within the context window; the zero
	// Context leaves it unmanaged.
	Context Context
}

// Named conditions.
const (
	Baseline  = "baseline"
	Harness   = "harness"
	HarnessSP = "harness_sp"
)

// component switches by their recorded name (events.Component*).
var componentFields = []struct {
	name string
	get  func(*Components) *bool
}{
	{events.ComponentBreaker, func(c *Components) *bool { return &c.CircuitBreaker }},
	{events.ComponentForcedTool, func(c *Components) *bool { return &c.ForcedTool }},
	{events.ComponentFSM, func(c *Components) *bool { return &c.FSM }},
	{events.ComponentPermission, func(c *Components) *bool { return &c.PermissionGate }},
	{events.ComponentRetry, func(c *Components) *bool { return &c.Retry }},
	{events.ComponentSchemaGate, func(c *Components) *bool { return &c.SchemaGate }},
	{events.ComponentPlanning, func(c *Components) *bool { return &c.StructuredPlanning }},
	{events.ComponentValidation, func(c *Components) *bool { return &c.Validation }},
	{events.ComponentBashOnly, func(c *Components) *bool { return &c.BashOnly }},
	{events.ComponentDistilled, func(c *Components) *bool { return &c.Distilled }},
	{events.ComponentTestProtection, func(c *Components) *bool { return &c.TestProtection }},
	{events.ComponentUpdatePlan, func(c *Components) *bool { return &c.PlanTool }},
}

// ComponentNames lists every component name, sorted.
func ComponentNames() []string {
	out := make([]string, 0, len(componentFields))
	for _, f := range componentFields {
		out = append(out, f.name)
	}
	slices.Sort(out)
	return out
}

// Names returns the names of the components switched on, sorted (as run.started records them).
func (c Components) Names() []string {
	out := []string{}
	for _, f := range componentFields {
		if *f.get(&c) {
			out = append(out, f.name)
		}
	}
	slices.Sort(out)
	return out
}

func (c *Components) set(name string, on bool) error {
	for _, f := range componentFields {
		if f.name == name {
			*f.get(c) = on
			return nil
		}
	}
	return fmt.Errorf("%w: component %q (known: %v)", ErrUnknown, name, ComponentNames())
}

func named(name string) (Components, bool) {
	switch name {
	case Baseline:
		return Components{}, true
	case Harness:
		return Components{FSM: true, ForcedTool: true, Validation: true, Retry: true, SchemaGate: true,
			PermissionGate: true, CircuitBreaker: true}, true
	case HarnessSP:
		c, _ := named(Harness)
		c.StructuredPlanning = true
		return c, true
	}
	return Components{}, false
}

// Parse resolves a condition name: baseline, harness, harness_sp, or an expression
// starting with one of them or with a component name, followed by "+component" or
// "-component" terms, e.g. "harness-retry", "baseline+schema_gate", "fsm+forced_tool". One
// term may be a context preset (see ParseContext), e.g. "bash_only+update_plan+t4_8k". The
// Condition keeps the given name and has DefaultLimits.
func Parse(name string) (Condition, error) {
	if name == "" {
		return Condition{}, fmt.Errorf("%w: empty name", ErrUnknown)
	}
	// Split into signed terms; the first term has an implicit '+'.
	var terms []string
	var signs []byte
	start, sign := 0, byte('+')
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '+' || name[i] == '-' {
			terms, signs = append(terms, name[start:i]), append(signs, sign)
			if i < len(name) {
				sign, start = name[i], i+1
			}
		}
	}
	var c Components
	var cond Context
	for i, t := range terms {
		if t == "" {
			return Condition{}, fmt.Errorf("%w: %q has an empty term", ErrUnknown, name)
		}
		if ctx, ok, err := parseContextTerm(t); ok || err != nil {
			switch {
			case err != nil:
				return Condition{}, fmt.Errorf("%w (in %q)", err, name)
			case signs[i] != '+':
				return Condition{}, fmt.Errorf("%w: %q: context term %s cannot be removed", ErrUnknown, name, t)
			case cond.Managed():
				return Condition{}, fmt.Errorf("%w: %q has two context terms", ErrContext, name)
			}
			cond = ctx
			continue
		}
		if base, ok := named(t); ok {
			if i != 0 {
				return Condition{}, fmt.Errorf("%w: %q: a named condition can only come first", ErrUnknown, name)
			}
			c = base
			continue
		}
		if err := c.set(t, signs[i] == '+'); err != nil {
			return Condition{}, fmt.Errorf("%w (in %q)", err, name)
		}
	}
	return Condition{Name: name, Components: c, Limits: DefaultLimits(), Context: cond}, nil
}

// New builds a condition with a study-chosen name from component names.
func New(name string, components []string) (Condition, error) {
	if strings.TrimSpace(name) == "" {
		return Condition{}, fmt.Errorf("%w: empty name", ErrUnknown)
	}
	var c Components
	for _, n := range components {
		if err := c.set(n, true); err != nil {
			return Condition{}, err
		}
	}
	return Condition{Name: name, Components: c, Limits: DefaultLimits()}, nil
}
