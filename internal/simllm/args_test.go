package simllm

import (
	"encoding/json"
	mrand "math/rand/v2"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

// idealCalls returns every (tool, ideal args) the ideal agent makes on every instance.
func idealCalls(t *testing.T, task *tasks.Task) map[string][]json.RawMessage {
	t.Helper()
	out := map[string][]json.RawMessage{}
	for i := range task.Instances {
		ag := &agent{ctx: t.Context(), task: task, inst: &task.Instances[i], prompt: task.Instances[i].Prompt}
		p, err := ag.path(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p {
			out[s.Tool] = append(out[s.Tool], s.Args)
		}
	}
	return out
}

// TestArgumentVariants checks the three kinds of argument deviation on every tool of every
// task: format variants satisfy the tool's schema and differ from the ideal; invalid variants
// violate it; out-of-scope variants satisfy it but name a resource outside the instance scope.
func TestArgumentVariants(t *testing.T) {
	for _, task := range allTasks(t) {
		calls := idealCalls(t, task)
		for _, tool := range task.Tools {
			args := calls[tool.Name]
			if len(args) == 0 {
				continue // a branch no instance takes
			}
			sn, sch := parseSchema(tool.Schema), validatorFor(tool.Schema)
			if sch == nil {
				t.Fatalf("%s: schema does not compile", tool.Name)
			}
			ideal, _ := decodeObject(args[0])
			inst := &task.Instances[0]
			r := mrand.New(mrand.NewPCG(1, 2))
			formatChanged, scopeChanged := 0, 0
			for range 40 {
				if v, ok := applyMutators(r, formatMutators, ideal, sn, sch, true, 10); ok {
					formatChanged++
					if !valid(sch, v) {
						t.Errorf("%s: format variant %v violates the schema", tool.Name, v)
					}
				}
				v, ok := applyMutators(r, invalidMutators, ideal, sn, sch, false, 10)
				if !ok || valid(sch, v) {
					t.Errorf("%s: invalid variant %v (ok %v) satisfies the schema", tool.Name, v, ok)
				}
				if v, ok := scopeVariant(r, ideal, &tool, task, inst, sch); ok {
					scopeChanged++
					raw, _ := json.Marshal(v)
					if len(tasks.OutOfScope(inst.Scope, tool.Resources(raw))) == 0 || !valid(sch, v) {
						t.Errorf("%s: scope variant %s is in scope or schema-invalid", tool.Name, raw)
					}
				}
			}
			if formatChanged == 0 || scopeChanged == 0 {
				t.Errorf("%s: %d format variants, %d scope variants in 40 tries; want some of each", tool.Name, formatChanged, scopeChanged)
			}
		}
	}
}

func TestEncodeArgsCosmetic(t *testing.T) {
	v := map[string]any{"b": json.Number("1.50"), "a": []any{"x", map[string]any{"d": true, "c": nil}}}
	plain := encodeArgs(v, nil)
	if plain != `{"a":["x",{"c":null,"d":true}],"b":1.50}` {
		t.Errorf("encodeArgs(v, nil) = %s", plain)
	}
	r := mrand.New(mrand.NewPCG(3, 4))
	for range 20 {
		got := encodeArgs(v, r)
		if b, _ := json.Marshal(canonicalText(got)); string(b) != plain {
			t.Errorf("encodeArgs(v, r) = %s, canonically %s, want %s", got, b, plain)
		}
	}
}

func TestSchemaDefaults(t *testing.T) {
	tests := []struct {
		give string
		want any
		ok   bool
	}{
		{`{"type":"integer","description":"decimal places (default 2)"}`, json.Number("2"), true},
		{`{"type":"boolean","description":"treat warnings as errors (default false)"}`, false, true},
		{`{"enum":["mg/dL","umol/L"],"description":"unit (default mg/dL)"}`, "mg/dL", true},
		{`{"type":"array","description":"checks to run (default: all)"}`, nil, false},
		{`{"type":"string","default":"x"}`, "x", true},
		{`{"enum":["a","b"],"description":"(default c)"}`, nil, false},
	}
	for _, tt := range tests {
		got, ok := parseSchema(json.RawMessage(tt.give)).defaultValue()
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("defaultValue(%s) = %v, %v, want %v, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
}
