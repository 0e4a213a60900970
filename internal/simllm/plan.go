package simllm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// orderedObject is a JSON object that keeps its key order when encoded.
type orderedObject struct {
	keys []string
	vals map[string]any
}

func newOrdered() *orderedObject { return &orderedObject{vals: map[string]any{}} }

func (o *orderedObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// MarshalJSON encodes the members in insertion order.
func (o *orderedObject) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Plan malformations. The graph errors keep the JSON valid against a schema of strings or of
// enums of the graph's names, so they happen even under strict structured outputs; the others
// only where decoding is not constrained.
var (
	graphMalformations  = []string{"missing_step", "swapped_steps", "wrong_tool", "repeated_step"}
	formatMalformations = []string{"code_fence", "truncated", "trailing_comma", "prose_wrapped", "renamed_key", "lowercase_state", "unknown_state"}
)

// planKeys are the member names the requested schema uses for a step's state and tool.
type planKeys struct {
	state, tool string
}

var defaultPlanKeys = planKeys{state: "state", tool: "intended_tool"}

// stepKeys recognises an object schema describing one plan step.
func stepKeys(s schemaNode) (planKeys, bool) {
	props := s.props()
	var k planKeys
	for _, name := range []string{"state", "intended_tool", "tool"} {
		if _, ok := props[name]; ok {
			if name == "state" {
				k.state = name
			} else if k.tool == "" {
				k.tool = name
			}
		}
	}
	for _, name := range sortedKeys(props) {
		l := strings.ToLower(name)
		if k.state == "" && strings.Contains(l, "state") {
			k.state = name
		}
		if k.tool == "" && strings.Contains(l, "tool") && name != k.state {
			k.tool = name
		}
	}
	return k, k.state != "" && k.tool != ""
}

// isPlanSchema reports whether the schema has an array of plan steps somewhere near its root.
func isPlanSchema(s schemaNode) bool {
	if s == nil {
		return false
	}
	if s.typ() == "array" {
		_, ok := stepKeys(s.items())
		return ok
	}
	for _, p := range s.props() {
		if p.typ() == "array" {
			if _, ok := stepKeys(p.items()); ok {
				return true
			}
		}
	}
	return false
}

// planBuild carries what the plan filler needs.
type planBuild struct {
	steps     []step
	rename    bool // use "tool" for the tool member (a renamed key)
	lowercase bool // write state names in lower case
}

func (b *planBuild) items(item schemaNode) []any {
	keys, ok := stepKeys(item)
	if !ok {
		keys = defaultPlanKeys
	}
	if b.rename {
		if keys.tool == "tool" {
			keys.tool = "tool_name"
		} else {
			keys.tool = "tool"
		}
	}
	out := make([]any, 0, len(b.steps))
	for _, s := range b.steps {
		o := newOrdered()
		st := s.State
		if b.lowercase {
			st = strings.ToLower(st)
		}
		o.set(keys.state, st)
		o.set(keys.tool, s.Tool)
		if item != nil {
			props := item.props()
			for _, k := range sortedKeys(item.required()) {
				if _, done := o.vals[k]; !done && props[k] != nil {
					o.set(k, b.fill(props[k], k, 1))
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// fill builds a value for schema s in which every array of plan steps holds the plan.
func (b *planBuild) fill(s schemaNode, name string, depth int) any {
	if depth > 8 {
		return nil
	}
	for _, comb := range []string{"anyOf", "oneOf", "allOf"} {
		if arr, ok := s[comb].([]any); ok && len(arr) > 0 {
			return b.fill(asNode(arr[0]), name, depth+1)
		}
	}
	switch s.typ() {
	case "array":
		if _, ok := stepKeys(s.items()); ok || strings.Contains(strings.ToLower(name), "plan") || strings.Contains(strings.ToLower(name), "step") {
			return b.items(s.items())
		}
		return []any{}
	case "object":
		o := newOrdered()
		props := s.props()
		req := s.required()
		names := sortedKeys(props)
		// Required members first in the schema's stated order, then any plan array.
		if arr, ok := s["required"].([]any); ok {
			names = names[:0]
			for _, v := range arr {
				if k, ok := v.(string); ok {
					names = append(names, k)
				}
			}
			for _, k := range sortedKeys(props) {
				if _, isPlan := stepKeys(props[k].items()); !req[k] && props[k].typ() == "array" && isPlan {
					names = append(names, k)
				}
			}
		}
		for _, k := range names {
			if p, ok := props[k]; ok {
				o.set(k, b.fill(p, k, depth+1))
			}
		}
		return o
	case "string":
		if e := s.enum(); len(e) > 0 {
			return e[0]
		}
		return "Follow the task's state graph from the start state to the report."
	case "integer", "number":
		if lo, ok := s.num("minimum"); ok {
			return lo
		}
		return 0
	case "boolean":
		return true
	}
	if e := s.enum(); len(e) > 0 {
		return e[0]
	}
	return nil
}

// jsonPlan writes the ideal plan in the requested JSON shape, malformed with probability
// malformRate. schema is the json_schema's schema (nil for json_object, which gets
// {"plan": [...]} since JSON mode must produce an object). rate is the layout-wording rate.
func jsonPlan(d dice, rate, malformRate float64, strict bool, steps []step, schema schemaNode) string {
	b := &planBuild{steps: append([]step(nil), steps...)}
	kind := ""
	if d.chance("jsonplan/malformed", malformRate) {
		kinds := graphMalformations
		if !strict {
			kinds = append(append([]string(nil), graphMalformations...), formatMalformations...)
		}
		kind = kinds[d.pick("jsonplan/kind", len(kinds))]
	}
	r := d.rng("jsonplan/malformation")
	n := len(b.steps)
	switch kind {
	case "missing_step":
		if n > 1 {
			i := r.IntN(n)
			b.steps = append(b.steps[:i], b.steps[i+1:]...)
		}
	case "swapped_steps":
		if n > 1 {
			i := r.IntN(n - 1)
			b.steps[i], b.steps[i+1] = b.steps[i+1], b.steps[i]
		}
	case "wrong_tool":
		if n > 1 {
			i := r.IntN(n)
			j := (i + 1 + r.IntN(n-1)) % n
			b.steps[i].Tool = steps[j].Tool
		}
	case "repeated_step":
		if n > 0 {
			i := r.IntN(n)
			b.steps = append(b.steps[:i+1], b.steps[i:]...)
		}
	case "renamed_key":
		b.rename = true
	case "lowercase_state":
		b.lowercase = true
	case "unknown_state":
		if n > 0 {
			i := r.IntN(n)
			b.steps[i].State = b.steps[i].State + "_STEP"
		}
	}
	var v any
	if schema == nil {
		o := newOrdered()
		o.set("plan", b.items(nil))
		v = o
	} else {
		v = b.fill(schema, "plan", 0)
	}
	var out []byte
	if d.chance("jsonplan/pretty", rate) {
		out, _ = json.MarshalIndent(v, "", "  ")
	} else {
		out, _ = json.Marshal(v)
	}
	s := string(out)
	switch kind {
	case "code_fence":
		s = "```json\n" + s + "\n```"
	case "truncated":
		s = s[:max(1, len(s)*2/3)]
	case "trailing_comma":
		if i := strings.LastIndex(s, "]"); i > 0 {
			s = s[:i] + "," + s[i:]
		} else if i := strings.LastIndex(s, "}"); i > 0 {
			s = s[:i] + "," + s[i:]
		}
	case "prose_wrapped":
		s = "Here is the plan: " + s
	}
	return s
}

// genericJSON fills a requested schema that is not a plan (or a bare json_object request the
// persona does not recognise) with a minimal conforming value.
func genericJSON(schema schemaNode) string {
	b := &planBuild{}
	var v any = map[string]any{}
	if schema != nil {
		v = b.fill(schema, "", 0)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
