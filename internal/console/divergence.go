package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// call is one tool call of a run's trace, as run_folds stores it (canonical JSON).
type call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

func parseCalls(s string) ([]call, error) {
	if s == "" {
		return nil, nil
	}
	var cs []call
	if err := json.Unmarshal([]byte(s), &cs); err != nil {
		return nil, fmt.Errorf("console: calls: %w", err)
	}
	return cs, nil
}

// sameArgs compares canonical JSON: equal means equal.
func sameArgs(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// leaf is one scalar of a JSON document: its path ($.a.b[2]) and its canonical text.
type leaf struct{ Path, Value string }

// leaves flattens a JSON document into its scalar leaves in document order; empty objects and
// arrays are leaves themselves. Invalid JSON is one leaf, the text itself, at "$".
func leaves(doc json.RawMessage) []leaf {
	if len(doc) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return []leaf{{"$", string(doc)}}
	}
	var out []leaf
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				out = append(out, leaf{path, "{}"})
				return
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(path+"."+pathKey(k), x[k])
			}
		case []any:
			if len(x) == 0 {
				out = append(out, leaf{path, "[]"})
				return
			}
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		default:
			out = append(out, leaf{path, jsonText(x)})
		}
	}
	walk("$", v)
	return out
}

// jsonText is v as JSON text with <, > and & kept as they are: the page escapes it, and a
// reader must see the value the agent wrote.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// pathKey writes an object key in a path: bare when it is a plain name, else quoted.
func pathKey(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return k
	}
	return jsonText(k)
}

// leafDiff returns the paths where a and b differ (a value changed, or a leaf only one has),
// in path order.
func leafDiff(a, b json.RawMessage) []string {
	la, lb := map[string]string{}, map[string]string{}
	for _, l := range leaves(a) {
		la[l.Path] = l.Value
	}
	for _, l := range leaves(b) {
		lb[l.Path] = l.Value
	}
	var out []string
	for p, v := range la {
		if w, ok := lb[p]; !ok || w != v {
			out = append(out, p)
		}
	}
	for p := range lb {
		if _, ok := la[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// trace is what two runs are compared on: the fold's plan, states, calls and output.
type trace struct {
	Plan   string
	States []string
	Calls  []call
	Output *string // nil: no output
}

// Part kinds: where a trace first differs from another.
const (
	partTool   = "tool"
	partArgs   = "args"
	partLength = "length"
	partState  = "state"
	partPlan   = "plan"
	partOutput = "output"
)

// parting says where a trace first differs from a reference trace. Step is the 0-based index
// of the call (tool, args, length) or of the state (state); -1 for plan and output.
type parting struct {
	Kind   string
	Step   int
	Leaves []string // argument leaves that differ (args)
	Text   string   // in words
}

// firstDifference returns where t parts from ref, or nil when they agree.
func firstDifference(ref, t trace) *parting {
	for i := 0; i < min(len(ref.Calls), len(t.Calls)); i++ {
		a, b := ref.Calls[i], t.Calls[i]
		if a.Tool != b.Tool {
			return &parting{Kind: partTool, Step: i, Text: fmt.Sprintf("step %d: tool %s instead of %s", i+1, b.Tool, a.Tool)}
		}
		if !sameArgs(a.Args, b.Args) {
			ls := leafDiff(a.Args, b.Args)
			return &parting{Kind: partArgs, Step: i, Leaves: ls,
				Text: fmt.Sprintf("step %d: %s called with different arguments (%s)", i+1, a.Tool, strings.Join(ls, ", "))}
		}
	}
	if len(ref.Calls) != len(t.Calls) {
		i := min(len(ref.Calls), len(t.Calls))
		text := fmt.Sprintf("step %d: %d tool calls instead of %d", i+1, len(t.Calls), len(ref.Calls))
		return &parting{Kind: partLength, Step: i, Text: text}
	}
	for i := 0; i < max(len(ref.States), len(t.States)); i++ {
		var a, b string
		if i < len(ref.States) {
			a = ref.States[i]
		}
		if i < len(t.States) {
			b = t.States[i]
		}
		if a != b {
			return &parting{Kind: partState, Step: i, Text: fmt.Sprintf("state %d: %s instead of %s", i+1, orNone(b), orNone(a))}
		}
	}
	if ref.Plan != t.Plan {
		return &parting{Kind: partPlan, Step: -1, Text: "the plan differs"}
	}
	if (ref.Output == nil) != (t.Output == nil) || ref.Output != nil && *ref.Output != *t.Output {
		ls := leafDiff(rawOrNil(ref.Output), rawOrNil(t.Output))
		return &parting{Kind: partOutput, Step: -1, Leaves: ls, Text: "the final output differs (" + strings.Join(ls, ", ") + ")"}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func rawOrNil(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// valueCount is one value with the number of runs that have it.
type valueCount struct {
	Value string
	Runs  int64
}

// stepVariation is, for one step index, the tools called there and, per tool, the argument
// leaves that vary across the runs calling it there, each value with its run count. A run
// without this step counts under Tools as "(no step)"; a leaf a run's call lacks counts as
// "(absent)".
type stepVariation struct {
	Step   int // 1-based
	Tools  []valueCount
	Leaves []leafVariation
}

type leafVariation struct {
	Tool, Path string
	Values     []valueCount
	More       int // values not listed
}

// maxValues is how many values of a varying leaf the page lists.
const maxValues = 12

const (
	absentText = "(absent)"
	noStepText = "(no step)"
)

// variations computes, per step, which tools and argument leaves vary over weighted traces.
// Only steps where something varies are returned.
func variations(calls [][]call, weights []int64) []stepVariation {
	steps := 0
	for _, cs := range calls {
		steps = max(steps, len(cs))
	}
	var out []stepVariation
	for i := range steps {
		tools := map[string]int64{}
		// Per tool at this step: each trace's leaves, and every path any of them has.
		type tally struct {
			traces []int
			leaves []map[string]string
			paths  map[string]map[string]int64
		}
		byTool := map[string]*tally{}
		for t, cs := range calls {
			if i >= len(cs) {
				tools[noStepText] += weights[t]
				continue
			}
			tool := cs[i].Tool
			tools[tool] += weights[t]
			ty := byTool[tool]
			if ty == nil {
				ty = &tally{paths: map[string]map[string]int64{}}
				byTool[tool] = ty
			}
			m := map[string]string{}
			for _, l := range leaves(cs[i].Args) {
				m[l.Path] = l.Value
				if ty.paths[l.Path] == nil {
					ty.paths[l.Path] = map[string]int64{}
				}
			}
			ty.traces = append(ty.traces, t)
			ty.leaves = append(ty.leaves, m)
		}
		sv := stepVariation{Step: i + 1}
		if len(tools) > 1 {
			sv.Tools = counted(tools)
		}
		for _, tc := range counted(tools) {
			ty := byTool[tc.Value]
			if ty == nil {
				continue
			}
			for j, m := range ty.leaves {
				for p := range ty.paths {
					v, ok := m[p]
					if !ok {
						v = absentText
					}
					ty.paths[p][v] += weights[ty.traces[j]]
				}
			}
			paths := make([]string, 0, len(ty.paths))
			for p := range ty.paths {
				paths = append(paths, p)
			}
			slices.Sort(paths)
			for _, p := range paths {
				if len(ty.paths[p]) < 2 {
					continue
				}
				vc := counted(ty.paths[p])
				lv := leafVariation{Tool: tc.Value, Path: p, Values: vc}
				if len(vc) > maxValues {
					lv.Values, lv.More = vc[:maxValues], len(vc)-maxValues
				}
				sv.Leaves = append(sv.Leaves, lv)
			}
		}
		if sv.Tools != nil || sv.Leaves != nil {
			out = append(out, sv)
		}
	}
	return out
}

// counted returns m's values ordered by run count, descending, then by value.
func counted(m map[string]int64) []valueCount {
	out := make([]valueCount, 0, len(m))
	for v, n := range m {
		out = append(out, valueCount{v, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Runs != out[j].Runs {
			return out[i].Runs > out[j].Runs
		}
		return out[i].Value < out[j].Value
	})
	return out
}
