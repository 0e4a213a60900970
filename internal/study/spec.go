package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"

	"github.com/dittolab/ditto/internal/jsonend"
)

// Spec is a study: tasks × models × conditions × Runs, plus optional extra Cells, run against
// Endpoints with pinned Sampling and Seeds. Parse applies the defaults (Normalize) and checks
// it (Validate).
//
// Example:
//
//	{
//	  "name": "demo",
//	  "tasks": ["credit_ecl", "aml_screening"],
//	  "models": ["sim-steady", "sim-wobbly"],
//	  "conditions": ["baseline", "harness", "harness_sp", "no_planning_gate"],
//	  "runs": 20,
//	  "endpoints": {
//	    "sim": {"sim": true, "models": ["sim-steady", "sim-wobbly"]},
//	    "openai": {"base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY", "models": ["gpt-4o-mini"]}
//	  },
//	  "custom_conditions": {"no_planning_gate": {"components": ["fsm", "forced_tool", "validation"]}},
//	  "sampling": {"temperature": 0.7, "top_p": 1, "max_tokens": 1024},
//	  "seeds": {"base": 1000, "mode": "per_run"},
//	  "inputs": [0],
//	  "task_inputs": {"aml_screening": [0, 1]},
//	  "paired": true
//	}
type Spec struct {
	Name        string `json:"name"` // study name: a subject token ([A-Za-z0-9_-], ≤ 128 bytes)
	Description string `json:"description,omitempty"`

	// The matrix: every task × model × condition gets Runs runs.
	Tasks      []string `json:"tasks,omitempty"`
	Models     []string `json:"models,omitempty"`
	Conditions []string `json:"conditions,omitempty"`
	Runs       int      `json:"runs,omitempty"`
	// Cells adds cells outside the matrix (or makes the whole design when the matrix is empty).
	Cells []CellSpec `json:"cells,omitempty"`

	// Endpoints by name. Every model of the study must be served by exactly one endpoint.
	Endpoints map[string]Endpoint `json:"endpoints"`
	// CustomConditions names sets of harness components, usable in Conditions and Cells.
	// Besides these and the named conditions (baseline, harness, harness_sp), a condition may
	// be an expression such as "harness-retry" (see condition.Parse).
	CustomConditions map[string]ConditionSpec `json:"custom_conditions,omitempty"`
	// Limits bound the harness components of every condition (zero fields: harness defaults).
	Limits *Limits `json:"limits,omitempty"`

	Sampling Sampling `json:"sampling"`
	Seeds    Seeds    `json:"seeds"`
	// Inputs are the input instance indexes (tasks.Task.Instances) runs cycle through; default [0].
	Inputs []int `json:"inputs,omitempty"`
	// TaskInputs overrides Inputs for some tasks.
	TaskInputs map[string][]int `json:"task_inputs,omitempty"`
	// Paired makes run i of every condition of a (task, model) use the same input and seed
	// index; default true.
	Paired *bool `json:"paired,omitempty"`
	// TaskFiles holds the task files of the study's tasks that are not built in, as canonical
	// JSON by task name. A spec file names them by path in tasks (or cells, task_inputs);
	// ResolveTaskFiles reads them into TaskFiles, so that study.defined and the jobs carry the
	// tasks themselves.
	TaskFiles map[string]json.RawMessage `json:"task_files,omitempty"`
}

// CellSpec is one extra cell. Runs 0 means the spec's Runs.
type CellSpec struct {
	Task      string `json:"task"`
	Model     string `json:"model"`
	Condition string `json:"condition"`
	Runs      int    `json:"runs,omitempty"`
}

// Endpoint is an OpenAI-compatible endpoint, or the built-in simulated models (Sim).
type Endpoint struct {
	// Sim selects the simulated models the worker hosts on loopback (harness-worker run --sim).
	Sim     bool   `json:"sim,omitempty"`
	BaseURL string `json:"base_url,omitempty"` // e.g. https://api.openai.com/v1
	// APIKeyEnv is the NAME of the environment variable holding the API key on the workers.
	// The key itself never appears in a spec, a job or an event.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Models served by this endpoint, as sent in requests. For a sim endpoint, empty means
	// every default persona.
	Models                 []string `json:"models,omitempty"`
	TimeoutSeconds         float64  `json:"timeout_seconds,omitempty"`           // per attempt; 0: the client default (60 s)
	MaxRetries             int      `json:"max_retries,omitempty"`               // transport retries; 0: the client default (3)
	UseMaxCompletionTokens bool     `json:"use_max_completion_tokens,omitempty"` // send max_completion_tokens (newer OpenAI models)
}

// ConditionSpec is a custom condition: the harness components it switches on
// (events.Component* names) and optional limits overriding the spec's.
type ConditionSpec struct {
	Components []string `json:"components"`
	Limits     *Limits  `json:"limits,omitempty"`
	// Context manages a coding run's context window: tier (T0–T4), budget and the tier's
	// limits in tokens (zero: the tier's preset). A condition expression sets tier and budget
	// with a term such as t4_8k.
	Context *condition.Context `json:"context,omitempty"`
}

// Limits bound the harness components; zero fields take the harness defaults.
type Limits struct {
	MaxRetries       int   `json:"max_retries,omitempty"`
	MaxPlanReprompts int   `json:"max_plan_reprompts,omitempty"`
	MaxRepairTurns   int   `json:"max_repair_turns,omitempty"`
	TokenBudget      int64 `json:"token_budget,omitempty"`
	MaxSteps         int   `json:"max_steps,omitempty"`
}

// Sampling are the pinned sampling parameters of every request.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

// Seed modes.
const (
	SeedPerRun = "per_run" // seed = base + seed index
	SeedFixed  = "fixed"   // seed = base for every run
	SeedNone   = "none"    // no seed is sent
)

// Seeds say which seed each run sends.
type Seeds struct {
	Base int64  `json:"base"`
	Mode string `json:"mode,omitempty"` // SeedPerRun (default), SeedFixed or SeedNone
}

// Parse decodes a JSON spec strictly (unknown fields are errors), reads the task files it
// names by path (ResolveTaskFiles, relative to the working directory), applies the defaults and
// validates it. Errors are a *ValidationError naming each field at fault, or the task files'
// problems, each with its path and line in its file.
func Parse(data []byte) (*Spec, error) { return parseIn(data, "") }

func parseIn(data []byte, dir string) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, decodeError(err)
	}
	if jsonend.Check(dec) != nil {
		return nil, (problems{{Field: "(spec)", Msg: "trailing data after the JSON object"}}).err()
	}
	if err := s.ResolveTaskFiles(dir); err != nil {
		return nil, err
	}
	s.Normalize()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Load reads and parses a spec file; the task files it names by path are relative to its
// directory.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	s, err := parseIn(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// decodeError names the field of a JSON decoding error where it can.
func decodeError(err error) error {
	var ps problems
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		ps.add(typeErr.Field, "want %s, got JSON %s", typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		ps.add("(spec)", "invalid JSON at byte %d: %v", syntaxErr.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		msg := "unknown field"
		if strings.Contains(strings.ToLower(field), "key") || strings.Contains(strings.ToLower(field), "secret") ||
			strings.Contains(strings.ToLower(field), "token") && field != "max_tokens" {
			msg = "unknown field; a spec never holds a secret: name the environment variable that does with api_key_env"
		}
		ps.add(field, "%s", msg)
	default:
		ps.add("(spec)", "%v", err)
	}
	return ps.err()
}

// Normalize applies the defaults: paired runs, per-run seeds, inputs [0], and a sim
// endpoint's default personas.
func (s *Spec) Normalize() {
	if s.Paired == nil {
		t := true
		s.Paired = &t
	}
	if s.Seeds.Mode == "" {
		s.Seeds.Mode = SeedPerRun
	}
	if len(s.Inputs) == 0 {
		s.Inputs = []int{0}
	}
	for name, e := range s.Endpoints {
		if e.Sim && len(e.Models) == 0 {
			e.Models = simulatedModels()
			s.Endpoints[name] = e
		}
	}
}

// IsPaired reports whether runs are paired across conditions.
func (s *Spec) IsPaired() bool { return s.Paired == nil || *s.Paired }

// endpointOf returns the name of the endpoint serving model.
func (s *Spec) endpointOf(model string) (string, bool) {
	for _, name := range sortedKeys(s.Endpoints) {
		if slices.Contains(s.Endpoints[name].Models, model) {
			return name, true
		}
	}
	return "", false
}

// inputsOf returns the input instance indexes of task.
func (s *Spec) inputsOf(task string) []int {
	if in, ok := s.TaskInputs[task]; ok {
		return in
	}
	return s.Inputs
}

// Canonical returns the RFC 8785 canonical JSON of the spec as normalized, as recorded in
// study.defined. It holds no secret: a spec cannot hold one.
func (s *Spec) Canonical() (json.RawMessage, error) {
	c, err := events.CanonicalValue(s)
	if err != nil {
		return nil, fmt.Errorf("study: canonical spec: %w", err)
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
