package contextmgr

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dittolab/ditto/internal/llm"

	"github.com/dittolab/ditto/internal/jsonend"
)

// PlanToolName is the name of the planning tool.
const PlanToolName = "update_plan"

// Statuses of a plan step.
const (
	StepPending    = "pending"
	StepInProgress = "in_progress"
	StepCompleted  = "completed"
)

// Reminder is added to the first request of a run with planning on, until the model has a plan.
const Reminder = "Before you act, make a plan: call " + PlanToolName + " with the steps you will take, " +
	"and keep it current with the same tool as you work (mark a step in_progress when you start it, completed when it is done)."

// maxPlanSteps bounds a plan, so an appended plan cannot crowd out the history.
const maxPlanSteps = 20

// PlanStep is one step of a plan.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

// Plan is the model's current plan, as its last valid update_plan call gave it.
type Plan struct {
	Explanation string     `json:"explanation,omitempty"`
	Steps       []PlanStep `json:"plan"`
}

// PlanTool is the definition of update_plan.
func PlanTool() llm.ToolDef {
	return llm.ToolDef{
		Name:        PlanToolName,
		Description: "Record or revise your plan for this task. Send the whole plan each time: every step with its status; at most one step in_progress.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"explanation":{"type":"string"},` +
			`"plan":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"object","properties":{` +
			`"step":{"type":"string","minLength":1},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed"]}},` +
			`"required":["step","status"],"additionalProperties":false}}},` +
			`"required":["plan"],"additionalProperties":false}`),
	}
}

// ParsePlan reads the arguments of an update_plan call, naming the first problem it finds.
func ParsePlan(arguments string) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.DisallowUnknownFields()
	if err := jsonend.Decode(dec, &p); err != nil {
		return Plan{}, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	if len(p.Steps) == 0 || len(p.Steps) > maxPlanSteps {
		return Plan{}, fmt.Errorf("%w: plan has %d steps, want 1 to %d", ErrPlan, len(p.Steps), maxPlanSteps)
	}
	inProgress := 0
	for i, s := range p.Steps {
		switch {
		case strings.TrimSpace(s.Step) == "":
			return Plan{}, fmt.Errorf("%w: plan[%d].step is empty", ErrPlan, i)
		case s.Status == StepInProgress:
			inProgress++
		case s.Status != StepPending && s.Status != StepCompleted:
			return Plan{}, fmt.Errorf("%w: plan[%d].status %q is not pending, in_progress or completed", ErrPlan, i, s.Status)
		}
	}
	if inProgress > 1 {
		return Plan{}, fmt.Errorf("%w: %d steps in_progress, at most 1", ErrPlan, inProgress)
	}
	return p, nil
}

// Planner keeps a run's plan and adds it to each request's input. It is not safe for
// concurrent use.
type Planner struct {
	plan    *Plan
	updates int
}

// Update applies an update_plan call's arguments; an invalid plan leaves the current one.
func (pl *Planner) Update(arguments string) (Plan, error) {
	p, err := ParsePlan(arguments)
	if err != nil {
		return Plan{}, err
	}
	pl.plan = &p
	pl.updates++
	return p, nil
}

// Updates returns the number of valid updates so far.
func (pl *Planner) Updates() int { return pl.updates }

// Current returns the plan and whether there is one.
func (pl *Planner) Current() (Plan, bool) {
	if pl.plan == nil {
		return Plan{}, false
	}
	return *pl.plan, true
}

// Appended is the message added at the end of the next request's input, never stored in the
// history: the reminder until the model has a plan, then the plan. ok is false when nothing is
// to be added (no plan after the first turn).
func (pl *Planner) Appended(firstTurn bool) (m llm.Message, ok bool) {
	if pl.plan == nil {
		if !firstTurn {
			return llm.Message{}, false
		}
		return llm.Message{Role: llm.RoleUser, Content: Reminder}, true
	}
	var b strings.Builder
	b.WriteString("Your current plan (kept with " + PlanToolName + "):\n")
	for i, s := range pl.plan.Steps {
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, s.Status, s.Step)
	}
	return llm.Message{Role: llm.RoleUser, Content: b.String()}, true
}
