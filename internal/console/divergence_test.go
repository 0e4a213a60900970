package console

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestLeaves(t *testing.T) {
	for _, tc := range []struct {
		name, give string
		want       []leaf
	}{
		{"scalars in key order", `{"b":1,"a":"x"}`, []leaf{{"$.a", `"x"`}, {"$.b", "1"}}},
		{"nested and arrays", `{"a":{"b":[true,null]}}`, []leaf{{"$.a.b[0]", "true"}, {"$.a.b[1]", "null"}}},
		{"empty containers are leaves", `{"a":{},"b":[]}`, []leaf{{"$.a", "{}"}, {"$.b", "[]"}}},
		{"odd keys are quoted", `{"a b":1}`, []leaf{{`$."a b"`, "1"}}},
		{"markup kept as written", `{"s":"<b>&"}`, []leaf{{"$.s", `"<b>&"`}}},
		{"big numbers exact", `{"n":12345678901234567890}`, []leaf{{"$.n", "12345678901234567890"}}},
		{"not JSON", `{`, []leaf{{"$", "{"}}},
		{"empty", ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leaves(json.RawMessage(tc.give)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("leaves(%q) = %v, want %v", tc.give, got, tc.want)
			}
		})
	}
}

func TestLeafDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want []string
	}{
		{`{"a":1,"b":2}`, `{"a":1,"b":3}`, []string{"$.b"}},
		{`{"a":1}`, `{"a":1,"c":[1]}`, []string{"$.c[0]"}},
		{`{"a":[1,2]}`, `{"a":[1]}`, []string{"$.a[1]"}},
		{`{"a":1}`, `{"a":1}`, nil},
	} {
		if got := leafDiff(json.RawMessage(tc.a), json.RawMessage(tc.b)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("leafDiff(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func calls(cs ...string) []call {
	var out []call
	for i := 0; i < len(cs); i += 2 {
		out = append(out, call{Tool: cs[i], Args: json.RawMessage(cs[i+1])})
	}
	return out
}

func strp(s string) *string { return &s }

func TestFirstDifference(t *testing.T) {
	ref := trace{Plan: "p", States: []string{"a", "b"}, Calls: calls("find", `{"q":"x"}`, "fetch", `{"id":1}`), Output: strp(`{"r":1}`)}
	with := func(f func(*trace)) trace {
		t := ref
		t.Calls = append([]call(nil), ref.Calls...)
		t.States = append([]string(nil), ref.States...)
		f(&t)
		return t
	}
	for _, tc := range []struct {
		name string
		give trace
		want *parting
	}{
		{"same", ref, nil},
		{"another tool", with(func(t *trace) { t.Calls[1].Tool = "get" }),
			&parting{Kind: partTool, Step: 1, Text: "step 2: tool get instead of fetch"}},
		{"another argument", with(func(t *trace) { t.Calls[0].Args = json.RawMessage(`{"q":"y"}`) }),
			&parting{Kind: partArgs, Step: 0, Leaves: []string{"$.q"}, Text: "step 1: find called with different arguments ($.q)"}},
		{"a call more", with(func(t *trace) { t.Calls = append(t.Calls, call{Tool: "x", Args: json.RawMessage(`{}`)}) }),
			&parting{Kind: partLength, Step: 2, Text: "step 3: 3 tool calls instead of 2"}},
		{"another state", with(func(t *trace) { t.States[1] = "c" }),
			&parting{Kind: partState, Step: 1, Text: "state 2: c instead of b"}},
		{"a state fewer", with(func(t *trace) { t.States = t.States[:1] }),
			&parting{Kind: partState, Step: 1, Text: "state 2: (none) instead of b"}},
		{"another plan", with(func(t *trace) { t.Plan = "q" }), &parting{Kind: partPlan, Step: -1, Text: "the plan differs"}},
		{"another output", with(func(t *trace) { t.Output = strp(`{"r":2}`) }),
			&parting{Kind: partOutput, Step: -1, Leaves: []string{"$.r"}, Text: "the final output differs ($.r)"}},
		{"no output", with(func(t *trace) { t.Output = nil }),
			&parting{Kind: partOutput, Step: -1, Leaves: []string{"$.r"}, Text: "the final output differs ($.r)"}},
		// The calls are compared first: a trace that differs in a call and in the output parts
		// at the call.
		{"calls before output", with(func(t *trace) { t.Calls[1].Tool = "get"; t.Output = nil }),
			&parting{Kind: partTool, Step: 1, Text: "step 2: tool get instead of fetch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstDifference(ref, tc.give); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("firstDifference = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVariations(t *testing.T) {
	traces := [][]call{
		calls("find", `{"q":"acme","n":5}`, "fetch", `{"id":1}`),
		calls("find", `{"q":"ACME","n":5}`, "fetch", `{"id":1}`),
		calls("find", `{"q":"acme"}`),
	}
	weights := []int64{5, 2, 1}
	got := variations(traces, weights)
	want := []stepVariation{
		{Step: 1, Leaves: []leafVariation{
			{Tool: "find", Path: "$.n", Values: []valueCount{{"5", 7}, {absentText, 1}}},
			{Tool: "find", Path: "$.q", Values: []valueCount{{`"acme"`, 6}, {`"ACME"`, 2}}},
		}},
		{Step: 2, Tools: []valueCount{{"fetch", 7}, {noStepText, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("variations =\n%+v\nwant\n%+v", got, want)
	}
	if v := variations([][]call{calls("a", `{}`), calls("a", `{}`)}, []int64{1, 1}); v != nil {
		t.Errorf("variations of equal traces = %+v, want none", v)
	}
}

func TestLane(t *testing.T) {
	modal := calls("find", `{"q":"x"}`, "fetch", `{"id":1}`)
	got := lane(modal, calls("find", `{"q":"y"}`, "get", `{}`, "more", `{}`), &parting{Kind: partArgs, Step: 0})
	want := []laneStep{
		{Tool: "find", Args: `{"q":"y"}`, Class: "args", First: true},
		{Tool: "get", Args: `{}`, Class: "diff"},
		{Tool: "more", Args: `{}`, Class: "diff"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lane = %+v, want %+v", got, want)
	}
}
