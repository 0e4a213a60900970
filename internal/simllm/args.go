package simllm

import (
	"bytes"
	"encoding/json"
	"math"
	mrand "math/rand/v2"
	"path"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dittolab/ditto/internal/tasks"
)

// decodeObject decodes tool arguments into a map, numbers kept as their literal.
func decodeObject(raw json.RawMessage) (map[string]any, bool) {
	m, ok := canonicalAny(raw).(map[string]any)
	return m, ok
}

// cloneValue deep-copies a decoded JSON value.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func equalValues(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// mutator changes v in place according to its schema and reports whether it changed anything.
type mutator func(r *mrand.Rand, v map[string]any, s schemaNode) bool

// formatMutators make valid-but-different arguments.
var formatMutators = []mutator{addOptional, dropOptional, retuneOption, roundNumbers}

// invalidMutators make schema-violating arguments.
var invalidMutators = []mutator{dropRequired, wrongType, outOfRange, badEnum, extraField}

// applyMutators tries the mutators in a random order (at most tries attempts, each on a fresh
// copy) until one yields a value whose validity is wantValid; it returns the ideal value
// unchanged and false when none does.
func applyMutators(r *mrand.Rand, ms []mutator, ideal map[string]any, s schemaNode, sch *jsonschema.Schema, wantValid bool, tries int) (map[string]any, bool) {
	for range tries {
		v := cloneValue(ideal).(map[string]any)
		changed := false
		n := 1
		if wantValid && r.IntN(3) == 0 {
			n = 2 // sometimes two format differences at once
		}
		for range n {
			if ms[r.IntN(len(ms))](r, v, s) {
				changed = true
			}
		}
		if !changed || equalValues(v, ideal) {
			continue
		}
		if sch == nil || valid(sch, v) == wantValid {
			return v, true
		}
	}
	return ideal, false
}

// optionalValue proposes a value for an absent optional property: its default, the full list
// of an enum-item array, the first enum value, or false for a boolean.
func optionalValue(r *mrand.Rand, p schemaNode) (any, bool) {
	if v, ok := p.defaultValue(); ok {
		return v, true
	}
	switch p.typ() {
	case "array":
		if e := p.items().enum(); len(e) > 0 {
			list := append([]any(nil), e...)
			if r.IntN(2) == 0 {
				r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			}
			return list, true
		}
	case "boolean":
		return false, true
	}
	if e := p.enum(); len(e) > 0 {
		return e[0], true
	}
	return nil, false
}

func addOptional(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	props, req := s.props(), s.required()
	var cands []string
	for _, k := range sortedKeys(props) {
		if _, present := v[k]; !present && !req[k] {
			if _, ok := optionalValue(r, props[k]); ok {
				cands = append(cands, k)
			}
		}
	}
	if len(cands) == 0 {
		return false
	}
	k := cands[r.IntN(len(cands))]
	val, _ := optionalValue(r, props[k])
	v[k] = val
	return true
}

func dropOptional(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	req := s.required()
	var cands []string
	for _, k := range sortedKeys(v) {
		if !req[k] {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return false
	}
	delete(v, cands[r.IntN(len(cands))])
	return true
}

// retuneOption sets an optional integer setting (a precision, a rounding) to another value its
// schema allows.
func retuneOption(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	props, req := s.props(), s.required()
	var cands []string
	for _, k := range sortedKeys(props) {
		p := props[k]
		_, hasMin := p.num("minimum")
		_, hasMax := p.num("maximum")
		if !req[k] && p.typ() == "integer" && hasMin && hasMax {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return false
	}
	k := cands[r.IntN(len(cands))]
	lo, _ := props[k].num("minimum")
	hi, _ := props[k].num("maximum")
	if hi-lo > 100 {
		hi = lo + 100
	}
	v[k] = json.Number(strconv.Itoa(int(lo) + r.IntN(int(hi-lo)+1)))
	return true
}

// roundNumbers rounds one or more non-integer numbers to fewer decimals.
func roundNumbers(r *mrand.Rand, v map[string]any, _ schemaNode) bool {
	var leaves []func(json.Number)
	var nums []json.Number
	var walk func(x any, set func(any))
	walk = func(x any, set func(any)) {
		switch t := x.(type) {
		case map[string]any:
			for _, k := range sortedKeys(t) {
				walk(t[k], func(nv any) { t[k] = nv })
			}
		case []any:
			for i := range t {
				walk(t[i], func(nv any) { t[i] = nv })
			}
		case json.Number:
			if strings.Contains(string(t), ".") && !strings.ContainsAny(string(t), "eE") {
				leaves = append(leaves, func(n json.Number) { set(n) })
				nums = append(nums, t)
			}
		}
	}
	walk(v, nil)
	if len(leaves) == 0 {
		return false
	}
	// Round every number to one precision, as a model that "prefers 2 decimals" would.
	changed := false
	maxDec := 0
	for _, n := range nums {
		maxDec = max(maxDec, len(string(n))-strings.IndexByte(string(n), '.')-1)
	}
	dec := r.IntN(max(1, min(maxDec, 4)))
	for i, n := range nums {
		f, err := n.Float64()
		if err != nil {
			continue
		}
		p := math.Pow(10, float64(dec))
		rounded := json.Number(strconv.FormatFloat(math.Round(f*p)/p, 'f', -1, 64))
		if rounded != n {
			leaves[i](rounded)
			changed = true
		}
	}
	return changed
}

func dropRequired(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	var cands []string
	for _, k := range sortedKeys(s.required()) {
		if _, ok := v[k]; ok {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return false
	}
	delete(v, cands[r.IntN(len(cands))])
	return true
}

// wrongType gives a present property a value of the wrong type, the way models quote numbers
// or wrap a single value in an array.
func wrongType(r *mrand.Rand, v map[string]any, _ schemaNode) bool {
	keys := sortedKeys(v)
	if len(keys) == 0 {
		return false
	}
	k := keys[r.IntN(len(keys))]
	switch x := v[k].(type) {
	case json.Number:
		v[k] = string(x)
	case bool:
		v[k] = strconv.FormatBool(x)
	case string:
		v[k] = []any{x}
	case []any:
		b, _ := json.Marshal(x)
		v[k] = string(b)
	case map[string]any:
		b, _ := json.Marshal(x)
		v[k] = string(b)
	default:
		v[k] = "null"
	}
	return true
}

func outOfRange(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	props := s.props()
	type cand struct {
		key string
		val json.Number
	}
	var cands []cand
	for _, k := range sortedKeys(props) {
		p := props[k]
		step := 1.0
		if p.typ() == "number" {
			step = 0.5
		}
		if hi, ok := p.num("maximum"); ok {
			cands = append(cands, cand{k, json.Number(strconv.FormatFloat(hi+step, 'f', -1, 64))})
		}
		if lo, ok := p.num("minimum"); ok {
			cands = append(cands, cand{k, json.Number(strconv.FormatFloat(lo-step, 'f', -1, 64))})
		}
		if lo, ok := p.num("exclusiveMinimum"); ok {
			val := lo
			if n, ok := v[k].(json.Number); ok {
				if f, err := n.Float64(); err == nil && f > lo {
					val = lo - f // the value with its sign flipped, relative to the bound
				}
			}
			cands = append(cands, cand{k, json.Number(strconv.FormatFloat(val, 'f', -1, 64))})
		}
	}
	if len(cands) == 0 {
		return false
	}
	c := cands[r.IntN(len(cands))]
	v[c.key] = c.val
	return true
}

func badEnum(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	props := s.props()
	var cands []string
	for _, k := range sortedKeys(props) {
		if len(props[k].enum()) > 0 {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return false
	}
	k := cands[r.IntN(len(cands))]
	e := props[k].enum()
	base, _ := e[r.IntN(len(e))].(string)
	switch r.IntN(3) {
	case 0:
		v[k] = strings.ToUpper(base)
	case 1:
		v[k] = strings.ReplaceAll(base, "_", " ") + "s"
	default:
		v[k] = "default"
	}
	return true
}

// extraField adds a field the schema does not know, named as models tend to name them.
func extraField(r *mrand.Rand, v map[string]any, s schemaNode) bool {
	if !s.closed() {
		return false
	}
	props := s.props()
	names := []string{"file", "dataset", "notes", "verbose", "units", "reason"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		if _, known := props[n]; known {
			continue
		}
		switch n {
		case "verbose":
			v[n] = true
		case "file", "dataset":
			if p, ok := v["path"].(string); ok {
				v[n] = p
			} else {
				v[n] = "input"
			}
		default:
			v[n] = "as requested"
		}
		return true
	}
	return false
}

// scopeVariant replaces a resource the call touches by one outside the instance's scope, the
// way models wander: another instance's dataset, the whole dataset directory, a parent-directory
// escape or an absolute path. The result still satisfies the schema: the permission gate, not
// the schema gate, is what should catch it.
func scopeVariant(r *mrand.Rand, ideal map[string]any, tool *tasks.Tool, task *tasks.Task, inst *tasks.Instance, sch *jsonschema.Schema) (map[string]any, bool) {
	if tool == nil || tool.Resources == nil {
		return ideal, false
	}
	raw, _ := json.Marshal(ideal)
	resources := map[string]bool{}
	for _, res := range tool.Resources(raw) {
		if res != "" {
			resources[res] = true
		}
	}
	var keys []string
	for _, k := range sortedKeys(ideal) {
		if s, ok := ideal[k].(string); ok && resources[s] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ideal, false
	}
	k := keys[r.IntN(len(keys))]
	orig := ideal[k].(string)
	var cands []string
	if task != nil && inst != nil {
		for _, other := range task.Instances {
			if other.ID != inst.ID && len(other.Scope) > 0 {
				cands = append(cands, strings.Replace(orig, inst.ID, other.ID, 1))
			}
		}
	}
	cands = append(cands,
		path.Dir(orig),
		orig+"/../../private/"+path.Base(orig),
		"../"+orig,
		"/"+orig,
	)
	r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	for _, c := range cands {
		if c == orig || c == "." || c == "/" {
			continue
		}
		if inst != nil && tasks.InScope(inst.Scope, c) {
			continue
		}
		v := cloneValue(ideal).(map[string]any)
		v[k] = c
		if valid(sch, v) {
			return v, true
		}
	}
	return ideal, false
}

// encodeArgs encodes arguments: sorted and compact normally, or (when r is not nil) with the
// keys in a random order and spacing a model might use, which canonical JSON makes equal again.
func encodeArgs(v any, r *mrand.Rand) string {
	if r == nil {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var buf bytes.Buffer
	spaced := r.IntN(2) == 0
	writeShuffled(&buf, v, r, spaced)
	return buf.String()
}

func writeShuffled(buf *bytes.Buffer, v any, r *mrand.Rand, spaced bool) {
	sep, colon := ",", ":"
	if spaced {
		sep, colon = ", ", ": "
	}
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteString(sep)
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteString(colon)
			writeShuffled(buf, x[k], r, spaced)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteString(sep)
			}
			writeShuffled(buf, e, r, spaced)
		}
		buf.WriteByte(']')
	default:
		b, _ := json.Marshal(x)
		buf.Write(b)
	}
}
