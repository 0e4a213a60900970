package tasks

import (
	"context"
	"encoding/json"
	mrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/dittolab/ditto/events"
)

// refTasks are the built-in tasks as written in Go before they became task files.
func refTasks() map[string]*Task {
	return map[string]*Task{creditTask: refCreditECL(), renalTask: refRenalDosing(), amlTask: refAMLScreening()}
}

// TestBuiltinFilesMatchGo checks that each built-in task read from its task file is the task it
// was in Go: the same instructions, prompts, scopes, tools and schemas, graph and final tool.
func TestBuiltinFilesMatchGo(t *testing.T) {
	for name, ref := range refTasks() {
		got, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != ref.Title || got.Instructions != ref.Instructions || got.Start != ref.Start || got.FinalTool != ref.FinalTool {
			t.Errorf("%s: title, instructions, start or final tool differ from the Go task", name)
		}
		if len(got.States) != len(ref.States) || len(got.Tools) != len(ref.Tools) || len(got.Instances) != len(ref.Instances) {
			t.Fatalf("%s: %d states, %d tools, %d instances; Go had %d, %d, %d", name, len(got.States), len(got.Tools),
				len(got.Instances), len(ref.States), len(ref.Tools), len(ref.Instances))
		}
		for i, s := range got.States {
			r := ref.States[i]
			if s.Name != r.Name || s.Tool != r.Tool || !slices.Equal(s.Next, r.Next) || (s.Route == nil) != (r.Route == nil) {
				t.Errorf("%s: state %d is %+v, Go had %+v", name, i, s, r)
			}
		}
		for i, tl := range got.Tools {
			r := ref.Tools[i]
			a, _ := events.Canonical(tl.Schema)
			b, _ := events.Canonical(r.Schema)
			if tl.Name != r.Name || tl.Description != r.Description || string(a) != string(b) {
				t.Errorf("%s: tool %d (%s) differs from the Go tool %s:\n%s\n%s", name, i, tl.Name, r.Name, a, b)
			}
		}
		for i, in := range got.Instances {
			r := ref.Instances[i]
			if in.ID != r.ID || in.Prompt != r.Prompt || !slices.Equal(in.Scope, r.Scope) {
				t.Errorf("%s: instance %d is %s %q %v, Go had %s %q %v", name, i, in.ID, in.Prompt, in.Scope, r.ID, r.Prompt, r.Scope)
			}
		}
	}
}

// argVariants draws n argument objects for a tool from its schema around base: optional
// members added with values the schema allows (or some it does not), members dropped.
func argVariants(r *mrand.Rand, schema json.RawMessage, base map[string]any, n int) []json.RawMessage {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := []json.RawMessage{mustJSON(base)}
	for range n {
		v := map[string]any{}
		for k, x := range base {
			if r.IntN(8) != 0 {
				v[k] = x
			}
		}
		for _, k := range keys {
			if r.IntN(2) == 0 {
				continue
			}
			if val, ok := drawValue(r, s.Properties[k]); ok {
				v[k] = val
			}
		}
		if r.IntN(10) == 0 {
			v["output_path"] = []string{"", "reports/x", "elsewhere/y"}[r.IntN(3)]
		}
		if p, ok := v["path"]; ok && r.IntN(15) == 0 {
			v["path"] = []any{[]any{p}, 7, nil}[r.IntN(3)] // a resource of the wrong type
		}
		if r.IntN(15) == 0 {
			v["lists"] = "ofac_sdn"
		}
		out = append(out, mustJSON(v))
	}
	return out
}

func drawValue(r *mrand.Rand, p map[string]any) (any, bool) {
	if e, ok := p["enum"].([]any); ok {
		if r.IntN(12) == 0 {
			return "not-in-enum", true
		}
		return e[r.IntN(len(e))], true
	}
	switch p["type"] {
	case "boolean":
		return r.IntN(2) == 0, true
	case "integer":
		lo, hi := 0, 8
		if v, ok := p["minimum"].(float64); ok {
			lo = int(v)
		}
		if v, ok := p["maximum"].(float64); ok {
			hi = int(v)
		}
		return lo - 1 + r.IntN(hi-lo+3), true
	case "number":
		return []float64{0.5, 0.8, 0.85, 0.9, 0.95, 1, 123.456, -1}[r.IntN(8)], true
	case "array":
		items, _ := p["items"].(map[string]any)
		if e, ok := items["enum"].([]any); ok {
			var l []any
			for _, x := range e {
				if r.IntN(2) == 0 {
					l = append(l, x)
				}
			}
			if l == nil {
				l = []any{}
			}
			return l, true
		}
		return []any{"OFAC-1001"}, true
	}
	return nil, false
}

// outputVariants are an output and, for each member, the output without it and with it null.
func outputVariants(out json.RawMessage) []json.RawMessage {
	res := []json.RawMessage{out}
	var m map[string]json.RawMessage
	if json.Unmarshal(out, &m) != nil {
		return res
	}
	for k := range m {
		del := map[string]json.RawMessage{}
		null := map[string]json.RawMessage{}
		for k2, v := range m {
			if k2 != k {
				del[k2] = v
			}
			null[k2] = v
		}
		null[k] = json.RawMessage("null")
		res = append(res, mustJSON(del), mustJSON(null))
	}
	return res
}

// TestBuiltinRulesMatchGo checks the task files' CEL rules, routes, resources and checks
// against the Go validators, routes, resource functions and checks they replace, on the
// outputs of thousands of tool calls (arguments drawn from the schemas, on the paths of every
// instance) and on those outputs with each member removed or null.
func TestBuiltinRulesMatchGo(t *testing.T) {
	r := mrand.New(mrand.NewPCG(17, 17))
	for name, ref := range refTasks() {
		got, _ := Get(name)
		compared := 0
		for ii := range got.Instances {
			inst := &got.Instances[ii]
			refInst := &ref.Instances[ii]
			var results []ToolResult
			for {
				tool, idealArgs, done := got.Ideal(inst.Prompt, results)
				if done {
					break
				}
				var base map[string]any
				_ = json.Unmarshal(idealArgs, &base)
				gt, _ := got.ToolByName(tool)
				rt, _ := ref.ToolByName(tool)
				gs, _ := got.StateOfTool(tool)
				rs, _ := ref.StateOfTool(tool)
				for _, args := range argVariants(r, gt.Schema, base, 40) {
					if a, b := gt.Resources(args), rt.Resources(args); !slices.Equal(a, b) {
						t.Errorf("%s %s(%s): resources %q, Go %q", name, tool, args, a, b)
					}
					out, err := gt.Exec(context.Background(), inst, args)
					if err != nil {
						continue
					}
					for _, o := range outputVariants(out) {
						compared++
						if a, b := gs.Validate(o), rs.Validate(o); !slices.Equal(a, b) {
							t.Errorf("%s %s output %s:\n file: %q\n Go:   %q", name, gs.Name, o, a, b)
						}
						if rs.Route != nil {
							a, aerr := gs.Route(o)
							b, berr := rs.Route(o)
							if a != b || (aerr == nil) != (berr == nil) {
								t.Errorf("%s route of %s = %q, %v; Go %q, %v", name, o, a, aerr, b, berr)
							}
						}
						if tool == got.FinalTool {
							if a, b := got.Check(inst, o), ref.Check(refInst, o); a != b {
								t.Errorf("%s/%s Check(%s) = %v, Go %v", name, inst.ID, o, a, b)
							}
						}
					}
				}
				tl, _ := got.ToolByName(tool)
				out, _ := tl.Exec(context.Background(), inst, idealArgs)
				results = append(results, ToolResult{Tool: tool, Args: idealArgs, Output: out})
			}
		}
		t.Logf("%s: %d outputs compared", name, compared)
	}
}
