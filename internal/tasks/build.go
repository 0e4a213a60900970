package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// taskDef is what a built-in task defines itself; build adds what the built-in tasks share.
type taskDef struct {
	name, title, instructions string
	// prompt is the user message of an instance; its one %s stands for the dataset path.
	prompt string
	// extraScope lists what every instance may touch besides its dataset and report paths.
	extraScope []string
	// states run from states[0], the start; the last state is terminal and its tool is the
	// final tool.
	states []State
	tools  []Tool
	check  func(inst *Instance, output json.RawMessage) bool
	// ideal gives the Ideal agent's arguments for a state (see idealFunc).
	ideal func(state, path string, results []ToolResult) map[string]any
}

// build makes the Task of d over its fixture store st, with one instance per stem in order.
func build(st store, stems []string, d taskDef) *Task {
	t := &Task{
		Name:         d.name,
		Title:        d.title,
		Instructions: d.instructions,
		Start:        d.states[0].Name,
		States:       d.states,
		Tools:        d.tools,
		FinalTool:    d.states[len(d.states)-1].Tool,
		Check:        d.check,
	}
	for _, id := range stems {
		p := datasetPath(d.name, id)
		t.Instances = append(t.Instances, Instance{
			ID:     id,
			Prompt: fmt.Sprintf(d.prompt, p),
			Scope:  append([]string{p, reportPath(d.name, id)}, d.extraScope...),
			Data:   st[p],
		})
	}
	t.Ideal = idealFunc(t, d.ideal)
	return t
}

// pathTool is a tool whose resources are its "path" and "output_path" arguments (pathResources).
func pathTool(name, description, schema string, exec func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error)) Tool {
	return Tool{Name: name, Description: description, Schema: json.RawMessage(schema), Resources: pathResources, Exec: exec}
}

// decodeLast decodes into v the output of the last successful call of tool in results, if any;
// a malformed output leaves v as it was decoded so far (the Ideal agent then sends what it has).
func decodeLast(results []ToolResult, tool string, v any) {
	if out, ok := lastOutput(results, tool); ok {
		_ = json.Unmarshal(out, v)
	}
}

// valueOr returns *p, or def when p is nil (an optional argument left out).
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// checksOr returns the checks a validation tool was asked to run, or all of them when none was
// named.
func checksOr(asked, all []string) []string {
	if len(asked) == 0 {
		return all
	}
	return asked
}

// finding is one issue a validation tool reports.
type finding struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func (f finding) severity() string { return f.Severity }

// passes reports whether a validation tool's findings let the data through: no error and,
// when strict, no finding at all.
func passes[F interface{ severity() string }](findings []F, strict bool) bool {
	for _, f := range findings {
		if f.severity() == "error" || strict {
			return false
		}
	}
	return true
}

// validationRan records the problems of a validation tool's output: each required check that
// was not run, then notValid when the data did not pass.
func (p *problems) validationRan(valid *bool, checks, required []string, notValid string) {
	for _, c := range required {
		if !slices.Contains(checks, c) {
			p.addf("required check %q was not run", c)
		}
	}
	if valid == nil || !*valid {
		p.addf("%s", notValid)
	}
}
