package simllm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/simllm/personas"
)

func TestDefaultPersonas(t *testing.T) {
	ps := DefaultPersonas()
	byName := map[string]Persona{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	steady, ok1 := byName["sim-steady"]
	wobbly, ok2 := byName["sim-wobbly"]
	if !ok1 || !ok2 {
		t.Fatalf("DefaultPersonas() = %v, want sim-steady and sim-wobbly", ps)
	}
	// The two personas exist to differ: every variance knob of the wobbly one is larger.
	pairs := []struct {
		name           string
		steady, wobbly float64
	}{
		{"arg_format_rate", steady.ArgFormat, wobbly.ArgFormat},
		{"plan_wording_rate", steady.PlanWording, wobbly.PlanWording},
		{"skip_rate", steady.Skip, wobbly.Skip},
		{"stop_early_rate", steady.StopEarly, wobbly.StopEarly},
		{"malformed_plan_rate", steady.MalformedPlan, wobbly.MalformedPlan},
		{"invalid_args_rate", steady.InvalidArgs, wobbly.InvalidArgs},
		{"out_of_scope_rate", steady.OutOfScope, wobbly.OutOfScope},
	}
	for _, p := range pairs {
		if !(p.steady < p.wobbly) {
			t.Errorf("%s: steady %v, wobbly %v, want steady < wobbly", p.name, p.steady, p.wobbly)
		}
	}
	// A fresh copy each call: callers may modify it.
	ps[0].Name = "changed"
	if DefaultPersonas()[0].Name == "changed" {
		t.Error("DefaultPersonas() shares its slice between calls")
	}
}

func TestLoadPersonas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "personas.json")
	if err := os.WriteFile(path, personas.JSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadPersonas(path)
	if err != nil {
		t.Fatalf("LoadPersonas(%q) error %v", path, err)
	}
	if len(ps) != len(DefaultPersonas()) {
		t.Errorf("LoadPersonas(%q) = %d personas, want %d", path, len(ps), len(DefaultPersonas()))
	}
	if _, err := LoadPersonas(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("LoadPersonas(missing file) error nil, want one")
	}
}

func TestParsePersonasErrors(t *testing.T) {
	one := func(fields string) string {
		return `{"version":1,"personas":[{"name":"p","system_fingerprint":"fp","temperature_floor":0.5,"repair_factor":0.5,"latency":{}` + fields + `}]}`
	}
	tests := []struct {
		name     string
		give     string
		wantErr  bool
		wantText string
	}{
		{"minimal", one(""), false, ""},
		{"unknown knob", one(`,"skip_probability":0.1`), true, "skip_probability"},
		{"rate above 1", one(`,"skip_rate":1.5`), true, "skip_rate"},
		{"negative rate", one(`,"invalid_args_rate":-0.1`), true, "invalid_args_rate"},
		{"context", one(`,"context":{"elided_fix_factor":0.5,"recall_rate":0.5,"plan_rate":0.5,"plan_give_up_factor":0.5,"summary_keep":0.5}`), false, ""},
		{"context rate above 1", one(`,"context":{"recall_rate":1.5}`), true, "context.recall_rate"},
		{"context factor negative", one(`,"context":{"elided_fix_factor":-0.1}`), true, "context.elided_fix_factor"},
		{"unknown context knob", one(`,"context":{"recall_probability":0.1}`), true, "recall_probability"},
		{"negative latency", `{"version":1,"personas":[{"name":"p","latency":{"base_ms":-1}}]}`, true, "latency.base_ms"},
		{"bad name", `{"version":1,"personas":[{"name":"has space","latency":{}}]}`, true, "name"},
		{"duplicate", `{"version":1,"personas":[{"name":"p","latency":{}},{"name":"p","latency":{}}]}`, true, "duplicate"},
		{"no personas", `{"version":1,"personas":[]}`, true, "no personas"},
		{"wrong version", `{"version":2,"personas":[{"name":"p","latency":{}}]}`, true, "version"},
		{"not json", `personas: yes`, true, "decode"},
		{"trailing data", one("") + `{}`, true, "trailing"},
		{"trailing bracket", one("") + `]`, true, "trailing"},
		{"trailing brace", one("") + " }", true, "trailing"},
		{"trailing white space", one("") + " \n\t\r\n", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePersonas([]byte(tt.give))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePersonas(%q) error = %v, wantErr %v", tt.give, err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidPersona) {
					t.Errorf("ParsePersonas(%q) error %v, want it to wrap ErrInvalidPersona", tt.give, err)
				}
				if !strings.Contains(err.Error(), tt.wantText) {
					t.Errorf("ParsePersonas(%q) error %q, want it to mention %q", tt.give, err, tt.wantText)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		give    Config
		wantErr error
	}{
		{"zero value", Config{}, nil},
		{"negative latency scale", Config{LatencyScale: -1}, ErrInvalidConfig},
		{"negative body limit", Config{MaxBodyBytes: -1}, ErrInvalidConfig},
		{"empty persona list", Config{Personas: []Persona{}}, ErrInvalidPersona},
		{"invalid persona", Config{Personas: []Persona{{Name: "x", Skip: 2}}}, ErrInvalidPersona},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.give.Validate()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Validate() = %v, want %v", err, tt.wantErr)
			}
			if _, nerr := NewServer(tt.give); (nerr == nil) != (tt.wantErr == nil) {
				t.Errorf("NewServer() error %v, want %v", nerr, tt.wantErr)
			}
		})
	}
}
