package simllm

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// A task the personas were not taught (any task file but the built-in ones) is done from what
// the request says, as a model does: the tools on offer in the order offered, their schemas
// and descriptions, the instance's input in the user message, the results of the calls so far,
// and what the harness's answers say (a state that authorizes only one tool). The persona
// calls the offered tools in order, each once it has succeeded, going back to a tool whose
// call failed; it passes over a tool whose required list would be empty by what it has seen
// (nothing to act on), and stops when every offered tool has succeeded. It draws each argument
// from what it has seen under the same name (the input, earlier outputs) when that value fits
// the argument's schema, and otherwise from the schema: an enum member, the default, a value
// in range. Every choice is drawn from the request's dice, so a seed replays it, and the
// persona's deviations (skips, early stops, malformed or out-of-scope arguments) apply as for
// the tasks it knows.

// authorizesRE reads the harness's answer to a call outside the current state.
var authorizesRE = regexp.MustCompile(`authorizes only ([A-Za-z0-9_.-]+)`)

// genericNext is the next tool of an untaught task, or done when every offered tool has
// succeeded.
func (t *turn) genericNext() (tool string, done bool) {
	res := t.conv.results
	if n := len(res); n > 0 && res[n-1].Err != "" {
		if m := authorizesRE.FindStringSubmatch(res[n-1].Err); m != nil && t.offered[m[1]] != nil {
			return m[1], false
		}
		if t.offered[res[n-1].Tool] != nil {
			return res[n-1].Tool, false // try the failed call again
		}
	}
	ok := map[string]bool{}
	last := -1
	for _, r := range res {
		if r.Err == "" && r.Output != nil {
			ok[r.Tool] = true
			if i := slices.Index(t.order, r.Tool); i > last {
				last = i
			}
		}
	}
	seen := t.seenValues()
	for i := last + 1; i < len(t.order); i++ {
		name := t.order[i]
		if ok[name] || t.nothingToDo(name, seen) {
			continue
		}
		return name, false
	}
	return "", true
}

// nothingToDo reports whether a tool's required list argument would be empty by what the
// persona has seen (e.g. an amendment of the missing clauses when none is missing).
func (t *turn) nothingToDo(name string, seen map[string]any) bool {
	s := t.toolSchemaNode(name)
	req := s.required()
	for k, p := range s.props() {
		if !req[k] || p.typ() != "array" {
			continue
		}
		if v, ok := seen[k].([]any); ok && len(v) == 0 {
			if min, ok := p.num("minItems"); ok && min >= 1 {
				return true
			}
		}
	}
	return false
}

// genericAct is act for an untaught task.
func (t *turn) genericAct() (answer, error) {
	tool, done := t.genericNext()
	mayStop := t.choice.mode == "auto"
	if done || tool == "" {
		if mayStop || len(t.order) == 0 {
			return t.final(false), nil
		}
		return t.callToolWith(t.order[len(t.order)-1], t.genericArgs(t.order[len(t.order)-1]))
	}
	if mayStop && len(t.conv.results) > 0 && t.d.chance("act/stop_early", t.rate(t.p.StopEarly)) {
		return t.final(true), nil
	}
	if t.d.chance("act/skip", t.rate(t.p.Skip)) {
		if i := slices.Index(t.order, tool); i >= 0 && i+1 < len(t.order) {
			tool = t.order[i+1]
		}
	}
	return t.callToolWith(tool, t.genericArgs(tool))
}

// seenValues are the values the persona has seen by name: the members of the JSON objects in
// the user messages (the instance's input), then of the successful outputs in order, a later
// one replacing an earlier one; members of nested objects count under their own names when no
// top-level member has the name.
func (t *turn) seenValues() map[string]any {
	top, nested := map[string]any{}, map[string]any{}
	add := func(obj map[string]any) {
		for k, v := range obj {
			top[k] = v
			if m, ok := v.(map[string]any); ok {
				for k2, v2 := range m {
					nested[k2] = v2
				}
			}
		}
	}
	for _, u := range t.conv.users {
		for _, obj := range jsonObjectsIn(u) {
			add(obj)
		}
	}
	for _, r := range t.conv.results {
		if r.Err != "" || r.Output == nil {
			continue
		}
		if obj, ok := decodeObject(r.Output); ok {
			add(obj)
		}
	}
	for k, v := range nested {
		if _, ok := top[k]; !ok {
			top[k] = v
		}
	}
	return top
}

// jsonObjectsIn finds the JSON objects written in a text (at most 8).
func jsonObjectsIn(text string) []map[string]any {
	var out []map[string]any
	for i := 0; i < len(text) && len(out) < 8; i++ {
		if text[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		var obj map[string]any
		if dec.Decode(&obj) == nil {
			out = append(out, obj)
			i += int(dec.InputOffset()) - 1
		}
	}
	return out
}

// genericArgs are the arguments the persona gives a tool of an untaught task: each required
// argument, and each optional one it has seen or decides to give, from what it has seen when
// that fits the argument's schema, else drawn from the schema.
func (t *turn) genericArgs(name string) json.RawMessage {
	s := t.toolSchemaNode(name)
	seen := t.seenValues()
	req := s.required()
	props := s.props()
	args := map[string]any{}
	for _, k := range sortedKeys(props) {
		p := props[k]
		v, have := seen[k]
		if have && !fits(p, v) {
			have = false
		}
		switch {
		case have:
			args[k] = v
		case req[k] || t.d.chance("generic/optional/"+name+"/"+k, 0.25):
			args[k] = t.drawValue(p, "generic/value/"+name+"/"+k, 0)
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// fits reports whether a seen value is valid against an argument's schema.
func fits(p schemaNode, v any) bool {
	raw, err := json.Marshal(map[string]any(p))
	if err != nil {
		return false
	}
	return valid(validatorFor(raw), v)
}

// drawValue draws a value of a schema: its default, an enum member, a number in range, a list
// of enum members, an object of its required members.
func (t *turn) drawValue(s schemaNode, label string, depth int) any {
	if v, ok := s.defaultValue(); ok && t.d.chance(label+"/default", 0.7) {
		return v
	}
	if e := s.enum(); len(e) > 0 {
		return e[t.d.pick(label+"/enum", len(e))]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	switch s.typ() {
	case "boolean":
		return t.d.chance(label+"/bool", 0.5)
	case "integer", "number":
		lo, hasLo := s.num("minimum")
		hi, hasHi := s.num("maximum")
		if !hasLo {
			lo = 0
		}
		if !hasHi {
			hi = lo + 10
		}
		x := lo + t.d.float(label+"/num")*(hi-lo)
		if s.typ() == "integer" {
			return json.Number(fmt.Sprint(int64(math.Floor(x))))
		}
		return json.Number(fmt.Sprintf("%.2f", x))
	case "array":
		items := s.items()
		n, _ := s.num("minItems")
		var out []any
		if e := items.enum(); len(e) > 0 {
			for i, v := range e {
				if t.d.chance(fmt.Sprintf("%s/item%d", label, i), 0.5) {
					out = append(out, v)
				}
			}
			for i := 0; len(out) < int(n) && i < len(e); i++ {
				if !slices.ContainsFunc(out, func(x any) bool { return x == e[i] }) {
					out = append(out, e[i])
				}
			}
			return nonNil(out)
		}
		for i := 0; i < int(n) && depth < 4; i++ {
			out = append(out, t.drawValue(items, fmt.Sprintf("%s/%d", label, i), depth+1))
		}
		return nonNil(out)
	case "object":
		obj := map[string]any{}
		if depth < 4 {
			req := s.required()
			for _, k := range sortedKeys(s.props()) {
				if req[k] {
					obj[k] = t.drawValue(s.props()[k], label+"/"+k, depth+1)
				}
			}
		}
		return obj
	case "string":
		if d := s.description(); d != "" {
			if m := egRE.FindStringSubmatch(d); m != nil {
				return m[1]
			}
		}
		return "n/a"
	}
	return nil
}

// egRE finds an example in a description: "e.g. DPA-2024-017".
var egRE = regexp.MustCompile(`e\.g\.\s+([^\s,;)]+)`)

func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// workflowRE reads one state of a workflow listed in the request ("STATE: tool → NEXT or
// OTHER", "STATE: tool → final"), as the harness's structured-plan prompt lists them.
var workflowRE = regexp.MustCompile(`([A-Za-z0-9_-]+): ([A-Za-z0-9_.-]+) → ([A-Za-z0-9_ -]+?)(?:;|\.\s|\.$)`)

// workflowPlan is the plan of an untaught task from a workflow the request lists: from the
// first state listed, the first successor at each branch (the path it expects, not having seen
// the data), each state at most once. Nil when the request lists none.
func (t *turn) workflowPlan() []step {
	texts := append(append([]string(nil), t.conv.users...), t.conv.system...)
	for i := len(texts) - 1; i >= 0; i-- {
		ms := workflowRE.FindAllStringSubmatch(texts[i], -1)
		if len(ms) == 0 {
			continue
		}
		type node struct {
			tool string
			next []string
		}
		graph := map[string]node{}
		for _, m := range ms {
			var next []string
			if n := strings.TrimSpace(m[3]); n != "final" {
				next = strings.Split(n, " or ")
			}
			graph[m[1]] = node{m[2], next}
		}
		var out []step
		seen := map[string]bool{}
		for s := ms[0][1]; s != "" && !seen[s]; {
			seen[s] = true
			n, ok := graph[s]
			if !ok {
				break
			}
			out = append(out, step{State: s, Tool: n.tool})
			s = ""
			if len(n.next) > 0 {
				s = strings.TrimSpace(n.next[0])
			}
		}
		return out
	}
	return nil
}
