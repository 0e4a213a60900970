package taskfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dittolab/ditto/events"
)

// JSON returns the task file as canonical JSON (RFC 8785): what a study records and sends to
// its workers, which Parse reads back to an equal Task.
func (t *Task) JSON() []byte { return t.canon }

// Digest is the lowercase hex SHA-256 of JSON: two files with the same digest are the same task.
func (t *Task) Digest() string {
	sum := sha256.Sum256(t.canon)
	return hex.EncodeToString(sum[:])
}

// StartState is the name of the first state.
func (t *Task) StartState() string { return t.prog.start }

// FinalTool is the tool whose accepted output is the run's final output.
func (t *Task) FinalTool() string { return t.prog.final }

// ArgumentSchema returns the compiled argument schema of a tool, or nil when the file gives
// none (a tool of an MCP server that takes the server's).
func (t *Task) ArgumentSchema(tool string) *jsonschema.Schema { return t.prog.args[tool] }

// StateProblems checks a tool output of a state with the state's validator and returns the
// problems found (none: valid).
func (t *Task) StateProblems(state string, output json.RawMessage) []string {
	sp := t.prog.states[state]
	if sp == nil || sp.validate == nil {
		return nil
	}
	out, ok := decode(output)
	if !ok {
		return []string{"output is not JSON"}
	}
	return sp.validate.problems(output, out, nil, nil)
}

// Validates reports whether the state checks its tool's output at all.
func (t *Task) Validates(state string) bool {
	sp := t.prog.states[state]
	return sp != nil && sp.validate != nil
}

// Route chooses the successor of a branching state from its tool's output: the first route
// whose condition holds. It fails when none does.
func (t *Task) Route(state string, output json.RawMessage) (string, error) {
	sp := t.prog.states[state]
	if sp == nil || len(sp.routes) == 0 {
		return "", fmt.Errorf("taskfile: state %s has no routes", state)
	}
	out, ok := decode(output)
	if !ok {
		return "", fmt.Errorf("taskfile: route from %s: the output is not JSON", state)
	}
	vars := map[string]any{"output": out, "item": nil}
	for _, r := range sp.routes {
		if r.when == nil || r.when.holds(vars) {
			return r.to, nil
		}
	}
	return "", fmt.Errorf("taskfile: route from %s: no route's condition holds for the output", state)
}

// Judge is the ground-truth check of a run's final output on an instance (its input and ideal
// output, each nil when it has none): the output passes the output's schema and rules and, when
// there is an ideal output, the output's check (or, without one, equals the ideal as canonical
// JSON).
func (t *Task) Judge(output, input, ideal json.RawMessage) bool {
	if len(t.OutputProblems(output, input, ideal)) > 0 {
		return false
	}
	if len(ideal) == 0 {
		return true
	}
	if t.prog.check == nil {
		a, err1 := events.Canonical(output)
		b, err2 := events.Canonical(ideal)
		return err1 == nil && err2 == nil && bytes.Equal(a, b)
	}
	out, _ := decode(output)
	in, _ := decode(input)
	id, _ := decode(ideal)
	return t.prog.check.holds(map[string]any{"output": out, "ideal": id, "input": in, "item": nil})
}

// OutputProblems checks a final output against the output's schema and rules only.
func (t *Task) OutputProblems(output, input, ideal json.RawMessage) []string {
	out, ok := decode(output)
	if !ok {
		return []string{"output is not JSON"}
	}
	in, _ := decode(input)
	id, _ := decode(ideal)
	return t.prog.output.problems(output, out, in, id)
}

// decode reads JSON for the CEL expressions. A member whose value is null is left out, so that
// a rule treats it as absent: has() is false, .?member gives none, and reading it is an error
// (which fails the rule), as for a member that is not there.
func decode(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return dropNulls(v), true
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}
