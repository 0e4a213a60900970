package simllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"

	"github.com/dittolab/ditto/internal/simllm/personas"

	"github.com/dittolab/ditto/internal/jsonend"
)

// Persona is one simulated model: how often and how it deviates from the ideal agent, how long
// it takes and how it counts tokens. Every *_rate is a probability in [0,1] per response (or per
// decision where stated) at temperature 1, top_p 1; see the package comment for the scaling.
type Persona struct {
	// Name is the model id clients ask for, e.g. "sim-steady". It must match [A-Za-z0-9._-]+.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Fingerprint is returned as system_fingerprint; change it when the persona's behaviour
	// changes, as a provider does when it changes its serving stack.
	Fingerprint string `json:"system_fingerprint"`

	// ArgFormat is the rate of valid-but-different arguments: an optional field added (with its
	// schema default) or dropped, numbers rounded to a different precision where the schema
	// allows, keys in another order.
	ArgFormat float64 `json:"arg_format_rate"`
	// PlanWording is the rate at which each element of a free-text plan or answer (intro,
	// layout, each step's phrasing, closing) departs from the persona's usual wording, and at
	// which a JSON plan is laid out differently (indentation).
	PlanWording float64 `json:"plan_wording_rate"`
	// Skip is the rate, when the model may choose its tool (tool_choice auto or required and
	// several tools offered), of jumping over the ideal next tool to the one after it.
	Skip float64 `json:"skip_rate"`
	// Backfill is the probability, after a jump, of going back to call the tool jumped over
	// (a reorder) rather than leaving it out (a skip). It is a choice, not scaled by temperature.
	Backfill float64 `json:"backfill_rate"`
	// StopEarly is the rate, when free to choose, of answering in text instead of calling the
	// next tool although the task is not finished.
	StopEarly float64 `json:"stop_early_rate"`
	// MalformedPlan is the rate of JSON plans that are wrong: when the request's json_schema is
	// strict only graph errors (a step missing, two steps swapped, a tool paired with the wrong
	// state, a step repeated); otherwise also broken JSON, a code fence, a renamed key or a
	// state name in the wrong case.
	MalformedPlan float64 `json:"malformed_plan_rate"`
	// InvalidArgs is the rate of tool calls whose arguments violate the tool's JSON Schema (a
	// required field missing, a wrong type, a value out of range, a value outside an enum, an
	// unknown field where none are allowed).
	InvalidArgs float64 `json:"invalid_args_rate"`
	// OutOfScope is the rate of tool calls that name a resource outside the task instance's
	// allowed scope (a parent-directory escape, another instance's data, an absolute path).
	OutOfScope float64 `json:"out_of_scope_rate"`
	// TemperatureFloor is the fraction of the nominal rates left at temperature 0.
	TemperatureFloor float64 `json:"temperature_floor"`
	// RepairFactor multiplies the error rates (malformed plan, invalid arguments, out of scope)
	// once per earlier failed attempt at the same step visible in the conversation: models
	// usually, but not always, fix what they were told was wrong.
	RepairFactor float64 `json:"repair_factor"`
	// CharsPerToken converts text length to token counts (default 4).
	CharsPerToken float64 `json:"chars_per_token,omitempty"`
	// Latency is how long a response takes; the server multiplies it by Config.LatencyScale.
	Latency LatencyModel `json:"latency"`
	// Coding is how the persona works on coding tasks (see CodingParams).
	Coding CodingParams `json:"coding"`
	// Context is how it responds, on coding tasks, to what context management and planning
	// leave visible (see ContextParams); absent, it does not respond to them (NeutralContext).
	Context *ContextParams `json:"context,omitempty"`
}

// LatencyModel is a response's duration: (BaseMS + PerInputTokenMS·prompt tokens +
// PerOutputTokenMS·completion tokens) milliseconds times a log-normal factor exp(N(0, Jitter²))
// drawn from the request's randomness.
type LatencyModel struct {
	BaseMS           float64 `json:"base_ms"`
	PerInputTokenMS  float64 `json:"per_input_token_ms"`
	PerOutputTokenMS float64 `json:"per_output_token_ms"`
	Jitter           float64 `json:"jitter"`
}

var personaNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Validate reports whether p can be served; the error wraps ErrInvalidPersona and names the field.
func (p Persona) Validate() error {
	if !personaNameRE.MatchString(p.Name) {
		return fmt.Errorf("%w: name %q must match %s", ErrInvalidPersona, p.Name, personaNameRE)
	}
	rates := []struct {
		field string
		v     float64
	}{
		{"arg_format_rate", p.ArgFormat}, {"plan_wording_rate", p.PlanWording},
		{"skip_rate", p.Skip}, {"backfill_rate", p.Backfill}, {"stop_early_rate", p.StopEarly},
		{"malformed_plan_rate", p.MalformedPlan}, {"invalid_args_rate", p.InvalidArgs},
		{"out_of_scope_rate", p.OutOfScope}, {"temperature_floor", p.TemperatureFloor},
		{"repair_factor", p.RepairFactor},
	}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("%w: %s: %s = %v, want a value in [0,1]", ErrInvalidPersona, p.Name, r.field, r.v)
		}
	}
	if err := p.Coding.validate(p.Name); err != nil {
		return err
	}
	if p.Context != nil {
		if err := p.Context.validate(p.Name); err != nil {
			return err
		}
	}
	if math.IsNaN(p.CharsPerToken) || p.CharsPerToken < 0 {
		return fmt.Errorf("%w: %s: chars_per_token = %v, want >= 0 (0 means 4)", ErrInvalidPersona, p.Name, p.CharsPerToken)
	}
	lat := []struct {
		field string
		v     float64
	}{
		{"latency.base_ms", p.Latency.BaseMS}, {"latency.per_input_token_ms", p.Latency.PerInputTokenMS},
		{"latency.per_output_token_ms", p.Latency.PerOutputTokenMS}, {"latency.jitter", p.Latency.Jitter},
	}
	for _, l := range lat {
		if math.IsNaN(l.v) || math.IsInf(l.v, 0) || l.v < 0 {
			return fmt.Errorf("%w: %s: %s = %v, want a finite value >= 0", ErrInvalidPersona, p.Name, l.field, l.v)
		}
	}
	return nil
}

// charsPerToken is the persona's token size, defaulting to 4 characters.
func (p *Persona) charsPerToken() float64 {
	if p.CharsPerToken <= 0 {
		return 4
	}
	return p.CharsPerToken
}

// personaFile is the on-disk form of a persona list.
type personaFile struct {
	Version  int       `json:"version"`
	Personas []Persona `json:"personas"`
}

// ParsePersonas decodes a persona file ({"version": 1, "personas": [...]}). Unknown fields are
// an error, so that a misspelt knob is not silently ignored; every persona is validated and
// names must be unique.
func ParsePersonas(data []byte) ([]Persona, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f personaFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: decode: %v", ErrInvalidPersona, err)
	}
	if jsonend.Check(dec) != nil {
		return nil, fmt.Errorf("%w: trailing data after the persona object", ErrInvalidPersona)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%w: version = %d, want 1", ErrInvalidPersona, f.Version)
	}
	if err := validatePersonas(f.Personas); err != nil {
		return nil, err
	}
	return f.Personas, nil
}

func validatePersonas(ps []Persona) error {
	if len(ps) == 0 {
		return fmt.Errorf("%w: no personas", ErrInvalidPersona)
	}
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if err := p.Validate(); err != nil {
			return err
		}
		if seen[p.Name] {
			return fmt.Errorf("%w: duplicate name %q", ErrInvalidPersona, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// LoadPersonas reads and parses a persona file; see ParsePersonas.
func LoadPersonas(path string) ([]Persona, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("simllm: load personas: %w", err)
	}
	ps, err := ParsePersonas(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ps, nil
}

// DefaultPersonas returns the personas of the default file (package personas: sim-steady and
// sim-wobbly), a fresh copy on every call.
func DefaultPersonas() []Persona {
	ps, err := ParsePersonas(personas.JSON())
	if err != nil {
		// The embedded file is checked by TestDefaultPersonas; reaching this is a build defect.
		panic(err)
	}
	return ps
}
