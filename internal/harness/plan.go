package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// Prompts the harness adds to the conversation. They describe what the harness needs, never
// which condition the run is under: the structured-plan request is recognisable by its
// response_format, the free-text one by offering no tools.
const (
	freePlanPrompt = "Before using any tool, describe your plan in a few sentences: the steps you will take, in order, and the tool you will use for each."
	proceedPrompt  = "Now carry out the task with the tools."
)

// planPrompts caches structuredPlanPrompt by task (see schemaCache).
var planPrompts sync.Map

// structuredPlanPrompt lists the graph so that a model can name states and tools exactly.
func structuredPlanPrompt(t *tasks.Task) string {
	if p, ok := planPrompts.Load(t); ok {
		return p.(string)
	}
	p, _ := planPrompts.LoadOrStore(t, buildPlanPrompt(t))
	return p.(string)
}

func buildPlanPrompt(t *tasks.Task) string {
	var b strings.Builder
	b.WriteString("Before using any tool, return your plan as a JSON array with one object per step, in order: ")
	b.WriteString(`[{"state": "<STATE>", "intended_tool": "<tool>"}, ...]. `)
	b.WriteString("The plan must be a path of the workflow from ")
	b.WriteString(t.Start)
	b.WriteString(" to a final state, visiting each state at most once. Workflow states (state: tool → next states): ")
	for i, s := range t.States {
		if i > 0 {
			b.WriteString("; ")
		}
		next := "final"
		if len(s.Next) > 0 {
			next = strings.Join(s.Next, " or ")
		}
		fmt.Fprintf(&b, "%s: %s → %s", s.Name, s.Tool, next)
	}
	b.WriteString(". Where the workflow branches on data you have not seen yet, plan the path you expect. Return only the JSON array.")
	return b.String()
}

func planRejectedPrompt(errs []string) string {
	return "Your plan was rejected: " + strings.Join(errs, "; ") +
		". Return a corrected plan: only the JSON array of {\"state\", \"intended_tool\"} objects."
}

// planFormats caches planFormat by task (see schemaCache).
var planFormats sync.Map

// planFormat is the response_format of the structured-plan request. Callers must not modify it.
func planFormat(t *tasks.Task) *llm.ResponseFormat {
	if f, ok := planFormats.Load(t); ok {
		return f.(*llm.ResponseFormat)
	}
	f, _ := planFormats.LoadOrStore(t, buildPlanFormat(t))
	return f.(*llm.ResponseFormat)
}

func buildPlanFormat(t *tasks.Task) *llm.ResponseFormat {
	var states, tools []string
	for _, s := range t.States {
		states = append(states, s.Name)
		tools = append(tools, s.Tool)
	}
	schema := map[string]any{
		"type":     "array",
		"minItems": 1,
		"items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"state":         map[string]any{"type": "string", "enum": states},
				"intended_tool": map[string]any{"type": "string", "enum": tools},
			},
			"required":             []string{"state", "intended_tool"},
			"additionalProperties": false,
		},
	}
	raw, _ := json.Marshal(schema) // plain maps of strings always marshal
	return &llm.ResponseFormat{Type: "json_schema", Name: "structured_plan", Schema: raw}
}

// parsePlan validates a structured plan against the task graph. It accepts a bare JSON array,
// or an object whose only field "plan" holds the array (what strict structured-output modes,
// which require an object at the root, tend to return). It returns the canonical steps, or the
// errors found (all of them, so that one re-prompt can fix several).
func parsePlan(t *tasks.Task, content string) ([]events.PlanStep, []string) {
	raw := bytes.TrimSpace([]byte(content))
	if len(raw) == 0 {
		return nil, []string{"the plan is empty"}
	}
	if raw[0] == '{' {
		var wrapped map[string]json.RawMessage
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			return nil, []string{"the plan is not valid JSON: " + err.Error()}
		}
		p, ok := wrapped["plan"]
		if !ok || len(wrapped) != 1 {
			return nil, []string{`the plan must be a JSON array (or an object with the single field "plan")`}
		}
		raw = p
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, []string{"the plan is not a JSON array of objects: " + err.Error()}
	}
	if len(items) == 0 {
		return nil, []string{"the plan has no steps"}
	}
	var errs []string
	steps := make([]events.PlanStep, 0, len(items))
	for i, it := range items {
		var st, tool string
		// Sorted keys: error messages reach events and the next prompt, so their order must
		// not depend on map iteration.
		for _, k := range slices.Sorted(maps.Keys(it)) {
			v := it[k]
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				errs = append(errs, fmt.Sprintf("step %d: %q must be a string", i+1, k))
				continue
			}
			switch k {
			case "state":
				st = s
			case "intended_tool":
				tool = s
			default:
				errs = append(errs, fmt.Sprintf("step %d: unexpected field %q", i+1, k))
			}
		}
		if st == "" || tool == "" {
			errs = append(errs, fmt.Sprintf("step %d: needs both \"state\" and \"intended_tool\"", i+1))
		}
		steps = append(steps, events.PlanStep{State: st, Tool: tool})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	errs = checkPath(t, steps)
	if len(errs) > 0 {
		return nil, errs
	}
	return steps, nil
}

// checkPath checks that steps are a path of the graph from Start to a terminal state, each
// naming its state's authorized tool and no state twice.
func checkPath(t *tasks.Task, steps []events.PlanStep) []string {
	var errs []string
	seen := map[string]bool{}
	var prev *tasks.State
	for i, s := range steps {
		st, ok := t.StateByName(s.State)
		if !ok {
			errs = append(errs, fmt.Sprintf("step %d: unknown state %q", i+1, s.State))
			prev = nil
			continue
		}
		if st.Tool != s.Tool {
			errs = append(errs, fmt.Sprintf("step %d: state %s uses tool %s, not %q", i+1, st.Name, st.Tool, s.Tool))
		}
		if seen[st.Name] {
			errs = append(errs, fmt.Sprintf("step %d: state %s is planned twice", i+1, st.Name))
		}
		seen[st.Name] = true
		switch {
		case i == 0 && st.Name != t.Start:
			errs = append(errs, fmt.Sprintf("step 1: the plan must start at %s, not %s", t.Start, st.Name))
		case i > 0 && prev != nil && !prev.Allows(st.Name):
			errs = append(errs, fmt.Sprintf("step %d: no transition %s → %s (allowed: %s)", i+1, prev.Name, st.Name, strings.Join(prev.Next, ", ")))
		}
		prev = st
	}
	if last, ok := t.StateByName(steps[len(steps)-1].State); ok && !last.Terminal() {
		errs = append(errs, fmt.Sprintf("the plan ends at %s, which is not a final state", last.Name))
	}
	return errs
}
