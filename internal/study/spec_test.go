package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// base is a valid spec as a generic JSON object, which each case mutates.
func base() map[string]any {
	return map[string]any{
		"name":       "s1",
		"tasks":      []any{"credit_ecl", "renal_dosing"},
		"models":     []any{"sim-steady", "sim-wobbly"},
		"conditions": []any{"baseline", "harness", "harness_sp"},
		"runs":       5,
		"endpoints": map[string]any{
			"sim":    map[string]any{"sim": true, "models": []any{"sim-steady", "sim-wobbly"}},
			"remote": map[string]any{"base_url": "https://example.invalid/v1", "api_key_env": "REMOTE_KEY", "models": []any{"org/model-x"}},
		},
		"sampling": map[string]any{"temperature": 0.7, "top_p": 1.0, "max_tokens": 512},
		"seeds":    map[string]any{"base": 100},
	}
}

func parseMap(t *testing.T, m map[string]any) (*Spec, error) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(b)
}

func TestParseValid(t *testing.T) {
	s, err := parseMap(t, base())
	if err != nil {
		t.Fatalf("Parse(base) = %v", err)
	}
	if !s.IsPaired() || s.Seeds.Mode != SeedPerRun || len(s.Inputs) != 1 || s.Inputs[0] != 0 {
		t.Errorf("defaults not applied: paired=%v seeds=%+v inputs=%v", s.IsPaired(), s.Seeds, s.Inputs)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(m map[string]any)
		wantField string
		wantMsg   string
	}{
		{"unknown task", func(m map[string]any) { m["tasks"] = []any{"credit_ecl", "tax_return"} }, "tasks[1]", "unknown task"},
		{"model not in endpoints", func(m map[string]any) { m["models"] = []any{"sim-steady", "gpt-9"} }, "models[1]", "not served by any endpoint"},
		{"unknown condition", func(m map[string]any) { m["conditions"] = []any{"baseline", "turbo"} }, "conditions[1]", "unknown condition"},
		{"unknown component in expression", func(m map[string]any) { m["conditions"] = []any{"harness-nope"} }, "conditions[0]", "unknown condition"},
		{"N zero", func(m map[string]any) { m["runs"] = 0 }, "runs", ">= 1"},
		{"N negative", func(m map[string]any) { m["runs"] = -3 }, "runs", ">= 1"},
		{"unsafe study name", func(m map[string]any) { m["name"] = "my study.v2" }, "name", "subject-safe"},
		{"empty study name", func(m map[string]any) { delete(m, "name") }, "name", "subject-safe"},
		{"unsafe condition name", func(m map[string]any) { m["conditions"] = []any{"baseline+schema_gate"} }, "conditions[0]", "subject-safe"},
		{"duplicate task", func(m map[string]any) { m["tasks"] = []any{"credit_ecl", "credit_ecl"} }, "tasks[1]", "duplicate"},
		{"duplicate condition", func(m map[string]any) { m["conditions"] = []any{"harness", "baseline", "harness"} }, "conditions[2]", "duplicate"},
		{"duplicate cell vs matrix", func(m map[string]any) {
			m["cells"] = []any{map[string]any{"task": "credit_ecl", "model": "sim-steady", "condition": "baseline"}}
		}, "cells[0]", "duplicate cell"},
		{"duplicate cells", func(m map[string]any) {
			c := map[string]any{"task": "aml_screening", "model": "sim-steady", "condition": "baseline", "runs": 2}
			m["cells"] = []any{c, c}
		}, "cells[1]", "duplicate cell"},
		{"cell unknown task", func(m map[string]any) {
			m["cells"] = []any{map[string]any{"task": "nope", "model": "sim-steady", "condition": "baseline"}}
		}, "cells[0].task", "unknown task"},
		{"cell unknown model", func(m map[string]any) {
			m["cells"] = []any{map[string]any{"task": "aml_screening", "model": "nope", "condition": "baseline"}}
		}, "cells[0].model", "not served"},
		{"cell runs", func(m map[string]any) {
			delete(m, "tasks")
			delete(m, "models")
			delete(m, "conditions")
			delete(m, "runs")
			m["cells"] = []any{map[string]any{"task": "aml_screening", "model": "sim-steady", "condition": "baseline"}}
		}, "cells[0].runs", ">= 1"},
		{"no cells", func(m map[string]any) {
			delete(m, "tasks")
			delete(m, "models")
			delete(m, "conditions")
		}, "tasks", "no cells"},
		{"matrix without models", func(m map[string]any) { m["models"] = []any{} }, "models", "empty"},
		{"no endpoints", func(m map[string]any) { delete(m, "endpoints"); m["models"] = []any{"sim-steady"} }, "endpoints", "no endpoints"},
		{"endpoint without base_url", func(m map[string]any) {
			m["endpoints"].(map[string]any)["remote"] = map[string]any{"models": []any{"x"}}
		}, "endpoints.remote.base_url", "required"},
		{"endpoint bad base_url", func(m map[string]any) {
			m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "ftp://x", "models": []any{"x"}}
		}, "endpoints.remote.base_url", "http"},
		{"api key pasted as env name", func(m map[string]any) {
			m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "https://x.invalid/v1", "api_key_env": "sk-live-abc123", "models": []any{"x"}}
		}, "endpoints.remote.api_key_env", "NAME of an environment variable"},
		{"api key field", func(m map[string]any) {
			m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "https://x.invalid/v1", "api_key": "sk-live", "models": []any{"x"}}
		}, "api_key", "never holds a secret"},
		{"model on two endpoints", func(m map[string]any) {
			m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "https://x.invalid/v1", "models": []any{"sim-steady"}}
		}, "endpoints.sim.models[0]", "also served"},
		{"unknown simulated model", func(m map[string]any) {
			m["endpoints"].(map[string]any)["sim"] = map[string]any{"sim": true, "models": []any{"sim-steady", "sim-wobbly", "sim-genius"}}
		}, "endpoints.sim.models[2]", "not a simulated model"},
		{"unsafe endpoint name", func(m map[string]any) {
			m["endpoints"].(map[string]any)["my endpoint"] = map[string]any{"sim": true, "models": []any{"x"}}
		}, "endpoints.my endpoint", "subject-safe"},
		{"custom condition unknown component", func(m map[string]any) {
			m["custom_conditions"] = map[string]any{"mine": map[string]any{"components": []any{"fsm", "telepathy"}}}
		}, "custom_conditions.mine.components[1]", "unknown component"},
		{"custom condition redefines named", func(m map[string]any) {
			m["custom_conditions"] = map[string]any{"harness": map[string]any{"components": []any{"fsm"}}}
		}, "custom_conditions.harness", "cannot be redefined"},
		{"temperature", func(m map[string]any) { m["sampling"] = map[string]any{"temperature": 2.5} }, "sampling.temperature", "[0, 2]"},
		{"top_p", func(m map[string]any) { m["sampling"] = map[string]any{"top_p": 0} }, "sampling.top_p", "(0, 1]"},
		{"max_tokens", func(m map[string]any) { m["sampling"] = map[string]any{"max_tokens": -1} }, "sampling.max_tokens", "negative"},
		{"seed mode", func(m map[string]any) { m["seeds"] = map[string]any{"mode": "sometimes"} }, "seeds.mode", "per_run"},
		{"input out of range", func(m map[string]any) { m["inputs"] = []any{0, 99} }, "inputs[1]", "out of range"},
		{"negative input", func(m map[string]any) { m["inputs"] = []any{-1} }, "inputs[0]", "negative"},
		{"task_inputs for absent task", func(m map[string]any) { m["task_inputs"] = map[string]any{"aml_screening": []any{0}} }, "task_inputs.aml_screening", "not in the study"},
		{"negative limit", func(m map[string]any) { m["limits"] = map[string]any{"max_retries": -1} }, "limits.max_retries", "negative"},
		{"wrong JSON type", func(m map[string]any) { m["runs"] = "many" }, "runs", "want int"},
		{"unknown field", func(m map[string]any) { m["repetitions"] = 3 }, "repetitions", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.mutate(m)
			_, err := parseMap(t, m)
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Parse = %v, want ErrInvalidSpec", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse = %T, want *ValidationError", err)
			}
			var found *FieldError
			for _, p := range ve.Problems {
				if p.Field == tt.wantField {
					found = p
					break
				}
			}
			if found == nil {
				t.Fatalf("Parse = %v\nwant a problem naming field %q", err, tt.wantField)
			}
			if !strings.Contains(found.Msg, tt.wantMsg) {
				t.Errorf("problem %q = %q, want it to mention %q", found.Field, found.Msg, tt.wantMsg)
			}
		})
	}
}

func TestValidationErrorNeverEchoesAKey(t *testing.T) {
	m := base()
	const key = "sk-proj-DoNotLeakMe"
	m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "https://x.invalid/v1", "api_key_env": key, "models": []any{"org/model-x"}}
	_, err := parseMap(t, m)
	if err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("Parse = %v; want an error that does not contain the pasted key", err)
	}
}

func TestCustomConditionsAndExpressions(t *testing.T) {
	m := base()
	m["conditions"] = []any{"baseline", "harness-retry", "gates_only"}
	m["custom_conditions"] = map[string]any{
		"gates_only": map[string]any{"components": []any{"schema_gate", "permission_gate"}, "limits": map[string]any{"max_steps": 7}},
	}
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range p.Jobs {
		got[j.Condition] = fmt.Sprint(j.Components, j.Limits.MaxSteps)
	}
	want := map[string]string{
		"baseline":      "[] 20",
		"harness-retry": "[circuit_breaker forced_tool fsm permission_gate schema_gate validation] 20",
		"gates_only":    "[permission_gate schema_gate] 7",
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("condition %s: components and max_steps = %s, want %s", c, got[c], w)
		}
	}
}

func TestShippedSpecsAreValid(t *testing.T) {
	want := map[string]int{"research": 1800, "small": 54}
	for _, name := range ShippedSpecs() {
		raw, err := ShippedSpec(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(raw)
		if err != nil {
			t.Fatalf("shipped spec %s: %v", name, err)
		}
		p, err := Expand(s)
		if err != nil {
			t.Fatalf("Expand(%s) = %v", name, err)
		}
		if w, ok := want[name]; ok && (len(p.Jobs) != w || p.Defined.ExpectedRuns != w) {
			t.Errorf("%s: %d jobs, expected_runs %d; want %d", name, len(p.Jobs), p.Defined.ExpectedRuns, w)
		}
	}
	if len(ShippedSpecs()) < 2 {
		t.Errorf("ShippedSpecs() = %v, want research and small", ShippedSpecs())
	}
}

// Only white space may follow the spec's object: "{…}]" and "{…}}" are trailing data, which
// json.Decoder.More alone would have let through.
func TestParseRefusesTrailingData(t *testing.T) {
	b, err := json.Marshal(base())
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"]", " }", "{}", "\n[1]"} {
		_, err := Parse(append(append([]byte(nil), b...), tail...))
		if err == nil || !strings.Contains(err.Error(), "trailing data") {
			t.Errorf("Parse(spec + %q) = %v, want a trailing-data error", tail, err)
		}
	}
	if _, err := Parse(append(append([]byte(nil), b...), " \n\t\r\n"...)); err != nil {
		t.Errorf("Parse(spec + white space) = %v, want it accepted", err)
	}
}
