package otlpmap

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file reads what an inference span says about its call beyond tokens: the sampling
// parameters, the response model, finish reasons, seed and fingerprint, the messages sent and
// returned and the ids of the tool calls the model asked for — from the GenAI semantic
// conventions (attributes and events), OpenInference (flattened llm.* attributes, the request's
// llm.invocation_parameters and the response in output.value) and OpenLLMetry (flattened
// gen_ai.prompt.* / gen_ai.completion.* attributes).

// Float returns the first of keys that holds a number (or a decimal string).
func (a Attrs) Float(keys ...string) (float64, bool) {
	for _, k := range keys {
		switch v := a[k].(type) {
		case float64:
			return v, true
		case int64:
			return float64(v), true
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, true
			}
		}
	}
	return 0, false
}

// jsonAttr decodes the first of keys holding a JSON object or array as a string (OpenInference's
// llm.invocation_parameters, input.value and output.value).
func jsonAttr(a Attrs, keys ...string) (any, bool) {
	for _, k := range keys {
		s, ok := a[k].(string)
		if !ok {
			continue
		}
		s = strings.TrimSpace(s)
		if s == "" || (s[0] != '{' && s[0] != '[') {
			continue
		}
		var v any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if d.Decode(&v) == nil {
			return v, true
		}
	}
	return nil, false
}

// path follows keys (object members; an int indexes an array) from v.
func path(v any, keys ...any) (any, bool) {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			v = l[k]
		}
	}
	return v, v != nil
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case json.Number:
		return x.String(), true
	}
	return "", false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	case float64:
		return int64(x), x == math.Trunc(x)
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// unflatten rebuilds the value flattened into attributes under prefix (OpenInference's
// llm.output_messages.0.message.role, OpenLLMetry's gen_ai.completion.0.content): numeric
// segments become array indexes. It returns nil when no attribute has the prefix.
func unflatten(a Attrs, prefix string) any {
	var keys []string
	for k := range a {
		if strings.HasPrefix(k, prefix+".") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	root := map[string]any{}
	for _, k := range keys {
		parts := strings.Split(strings.TrimPrefix(k, prefix+"."), ".")
		m := root
		for i, p := range parts {
			if i == len(parts)-1 {
				m[p] = a[k]
				break
			}
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
	}
	return arrays(root)
}

// arrays turns every object whose keys are all indexes 0..n-1 into an array, bottom up.
func arrays(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range m {
		m[k] = arrays(x)
	}
	idx := make([]int, 0, len(m))
	for k := range m {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 {
			return m
		}
		idx = append(idx, n)
	}
	slices.Sort(idx)
	for i, n := range idx {
		if i != n {
			return m
		}
	}
	out := make([]any, len(idx))
	for _, n := range idx {
		out[n] = m[strconv.Itoa(n)]
	}
	return out
}

// callDetails is what an inference span says about its call beyond tokens.
type callDetails struct {
	responseModel string
	temperature   *float64
	topP          *float64
	seed          *int64
	fingerprint   string
	finish        []string
	input, output any // messages sent and returned, nil when not recorded
	toolCallIDs   []string
}

// Attribute keys of the GenAI semantic conventions and OpenLLMetry, most specific first.
var (
	responseModelKeys = []string{"gen_ai.response.model", "llm.response.model"}
	temperatureKeys   = []string{"gen_ai.request.temperature", "llm.request.temperature"}
	topPKeys          = []string{"gen_ai.request.top_p", "llm.request.top_p", "llm.top_p"}
)

// details reads an inference span (its GenAI events included).
func details(s *Span) callDetails {
	var d callDetails
	a := s.Attrs
	params, _ := jsonAttr(a, "llm.invocation_parameters")
	response, _ := jsonAttr(a, "output.value")
	if _, isResponse := path(response, "choices"); !isResponse {
		response = nil // output.value of an LLM span is the response only when it has choices
	}
	if v, ok := a.Str(responseModelKeys...); ok {
		d.responseModel = v
	} else if v, ok := asString(pathOr(response, "model")); ok {
		d.responseModel = v
	} else if v, ok := a.Str("llm.model_name"); ok && a["openinference.span.kind"] != nil {
		d.responseModel = v // OpenInference names the model the response came from
	}
	if f, ok := a.Float(temperatureKeys...); ok {
		d.temperature = &f
	} else if f, ok := asFloat(pathOr(params, "temperature")); ok {
		d.temperature = &f
	}
	if f, ok := a.Float(topPKeys...); ok {
		d.topP = &f
	} else if f, ok := asFloat(pathOr(params, "top_p")); ok {
		d.topP = &f
	}
	if n, ok := a.Int(seedKeys...); ok {
		d.seed = &n
	} else if n, ok := asInt(pathOr(params, "seed")); ok {
		d.seed = &n
	}
	if v, ok := a.Str(fingerKeys...); ok {
		d.fingerprint = v
	} else if v, ok := asString(pathOr(response, "system_fingerprint")); ok {
		d.fingerprint = v
	}

	// Messages: the GenAI conventions' attributes, else their events, else OpenInference's and
	// OpenLLMetry's flattened attributes.
	if v, ok := jsonAttr(a, "gen_ai.input.messages"); ok {
		d.input = v
	}
	if v, ok := jsonAttr(a, "gen_ai.output.messages"); ok {
		d.output = v
	}
	var evIn, evOut []any
	for _, ev := range s.GenAI {
		body := ev.Body
		if body == nil && len(ev.Attrs) > 0 {
			body = map[string]any(ev.Attrs)
		}
		switch ev.Name {
		case "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message":
			m, _ := body.(map[string]any)
			if m == nil {
				m = map[string]any{"content": body}
			}
			if _, has := m["role"]; !has {
				m["role"] = strings.TrimSuffix(strings.TrimPrefix(ev.Name, "gen_ai."), ".message")
			}
			evIn = append(evIn, m)
		case "gen_ai.choice":
			evOut = append(evOut, body)
		case "gen_ai.client.inference.operation.details":
			if v, ok := ev.Attrs["gen_ai.input.messages"]; ok && d.input == nil {
				d.input = jsonish(v)
			}
			if v, ok := ev.Attrs["gen_ai.output.messages"]; ok && d.output == nil {
				d.output = jsonish(v)
			}
		}
	}
	if d.input == nil && evIn != nil {
		d.input = evIn
	}
	if d.output == nil && evOut != nil {
		d.output = evOut
	}
	for _, p := range [][2]string{{"llm.input_messages", "llm.output_messages"}, {"gen_ai.prompt", "gen_ai.completion"}} {
		if d.input == nil {
			d.input = unflatten(a, p[0])
		}
		if d.output == nil {
			d.output = unflatten(a, p[1])
		}
	}
	if d.output == nil && response != nil {
		d.output, _ = path(response, "choices")
	}

	if reasons, ok := a.Strs(finishKeys...); ok {
		d.finish = reasons
	} else {
		d.finish = collect(d.output, "finish_reason")
		if len(d.finish) == 0 {
			d.finish = collect(pathOr(response, "choices"), "finish_reason")
		}
	}
	d.toolCallIDs = toolCallIDs(d.output)
	if len(d.toolCallIDs) == 0 {
		d.toolCallIDs = toolCallIDs(pathOr(response, "choices"))
	}
	return d
}

func pathOr(v any, keys ...any) any {
	x, _ := path(v, keys...)
	return x
}

// jsonish is a value that may be JSON text.
func jsonish(v any) any {
	if s, ok := v.(string); ok {
		if x, ok := jsonAttr(Attrs{"v": s}, "v"); ok {
			return x
		}
	}
	return v
}

// collect returns every string value of members named key, depth first, in order.
func collect(v any, key string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := asString(x[key]); ok {
				out = append(out, s)
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k != key {
					walk(x[k])
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// toolCallIDs returns the ids of the tool calls in a model's output, in order: elements of a
// tool_calls array ({"id": …} as OpenAI and the GenAI events write it, {"tool_call": {"id": …}}
// as OpenInference does) and message parts of type tool_call (the GenAI output messages).
func toolCallIDs(v any) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id any) {
		if s, ok := asString(id); ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if t, _ := x["type"].(string); t == "tool_call" {
				add(x["id"])
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "tool_calls" {
					if l, ok := x[k].([]any); ok {
						for _, c := range l {
							if id, ok := path(c, "id"); ok {
								add(id)
							} else if id, ok := path(c, "tool_call", "id"); ok {
								add(id)
							}
						}
					}
				}
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
