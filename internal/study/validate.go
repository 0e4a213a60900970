package study

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/simllm/personas"
	"github.com/dittolab/ditto/internal/tasks"
)

// Bounds of a spec, against typing mistakes that would flood the queue.
const (
	MaxRunsPerCell = 1_000_000
	MaxTotalRuns   = 10_000_000
	maxModelName   = 256
)

// Validate checks a normalized spec and returns a *ValidationError listing every problem,
// each naming its field, or nil.
func (s *Spec) Validate() error {
	var ps problems
	if err := events.ValidateToken("name", s.Name); err != nil {
		ps.add("name", "%v", tokenMsg(err))
	}
	s.validateEndpoints(&ps)
	s.validateCustomConditions(&ps)
	if s.Limits != nil {
		validateLimits(&ps, "limits", *s.Limits)
	}
	s.validateSampling(&ps)
	switch s.Seeds.Mode {
	case SeedPerRun, SeedFixed, SeedNone, "":
	default:
		ps.add("seeds.mode", "%q, want %s, %s or %s", s.Seeds.Mode, SeedPerRun, SeedFixed, SeedNone)
	}

	matrix := len(s.Tasks) > 0 || len(s.Models) > 0 || len(s.Conditions) > 0
	if matrix {
		for _, l := range []struct {
			field string
			list  []string
		}{{"tasks", s.Tasks}, {"models", s.Models}, {"conditions", s.Conditions}} {
			if len(l.list) == 0 {
				ps.add(l.field, "empty: a matrix needs tasks, models and conditions")
			}
		}
		if s.Runs < 1 {
			ps.add("runs", "must be >= 1, got %d", s.Runs)
		} else if s.Runs > MaxRunsPerCell {
			ps.add("runs", "%d is more than %d runs per cell", s.Runs, MaxRunsPerCell)
		}
	} else if len(s.Cells) == 0 {
		ps.add("tasks", "the study has no cells: give tasks, models, conditions and runs, or cells")
	}
	s.validateTaskFiles(&ps)
	checkList(&ps, "tasks", s.Tasks, s.checkTask)
	checkList(&ps, "models", s.Models, s.checkModel)
	checkList(&ps, "conditions", s.Conditions, s.checkCondition)

	seen := map[cellKey]string{}
	if matrix {
		for _, t := range s.Tasks {
			for _, m := range s.Models {
				for _, c := range s.Conditions {
					seen[cellKey{t, m, c}] = "the tasks × models × conditions matrix"
				}
			}
		}
	}
	for i, c := range s.Cells {
		f := fmt.Sprintf("cells[%d]", i)
		if msg := s.checkTask(c.Task); msg != "" {
			ps.add(f+".task", "%s", msg)
		}
		if msg := s.checkModel(c.Model); msg != "" {
			ps.add(f+".model", "%s", msg)
		}
		if msg := s.checkCondition(c.Condition); msg != "" {
			ps.add(f+".condition", "%s", msg)
		}
		runs := c.Runs
		if runs == 0 {
			runs = s.Runs
		}
		if runs < 1 {
			ps.add(f+".runs", "must be >= 1, got %d (and the spec's runs is %d)", c.Runs, s.Runs)
		} else if runs > MaxRunsPerCell {
			ps.add(f+".runs", "%d is more than %d runs per cell", runs, MaxRunsPerCell)
		}
		k := cellKey{c.Task, c.Model, c.Condition}
		if where, dup := seen[k]; dup {
			ps.add(f, "duplicate cell (task %s, model %s, condition %s): already in %s", c.Task, c.Model, c.Condition, where)
		}
		seen[k] = f
	}
	if total := s.totalRuns(); total > MaxTotalRuns {
		ps.add("runs", "the study has %d runs, more than %d", total, MaxTotalRuns)
	}
	s.validateInputs(&ps)
	return ps.err()
}

type cellKey struct{ task, model, condition string }

// checkList checks each entry with check and flags duplicates.
func checkList(ps *problems, field string, list []string, check func(string) string) {
	first := map[string]int{}
	for i, v := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if j, dup := first[v]; dup {
			ps.add(f, "duplicate of %s[%d] (%q)", field, j, v)
			continue
		}
		first[v] = i
		if msg := check(v); msg != "" {
			ps.add(f, "%s", msg)
		}
	}
}

func (s *Spec) checkTask(name string) string {
	if _, ok := s.TaskFiles[name]; ok {
		return "" // checked with task_files
	}
	if _, err := tasks.Get(name); err != nil {
		return fmt.Sprintf("unknown task %q (built in: %s; or name a task file by its path)", name, strings.Join(append(tasks.Names(), tasks.CodingNames()...), ", "))
	}
	return ""
}

func (s *Spec) checkModel(name string) string {
	if msg := checkModelName(name); msg != "" {
		return msg
	}
	if _, ok := s.endpointOf(name); !ok {
		var served []string
		for _, n := range sortedKeys(s.Endpoints) {
			served = append(served, fmt.Sprintf("%s serves %s", n, strings.Join(s.Endpoints[n].Models, ", ")))
		}
		if len(served) == 0 {
			return fmt.Sprintf("model %q is not served by any endpoint (no endpoints)", name)
		}
		return fmt.Sprintf("model %q is not served by any endpoint (%s)", name, strings.Join(served, "; "))
	}
	return ""
}

func (s *Spec) checkCondition(name string) string {
	if err := events.ValidateToken("condition", name); err != nil {
		return tokenMsg(err)
	}
	if _, err := s.conditionOf(name); err != nil {
		custom := strings.Join(sortedKeys(s.CustomConditions), ", ")
		if custom == "" {
			custom = "none"
		}
		return fmt.Sprintf("unknown condition %q (named: baseline, harness, harness_sp; custom: %s; or an expression such as harness-retry over the components %s)",
			name, custom, strings.Join(condition.ComponentNames(), ", "))
	}
	return ""
}

// conditionOf resolves a condition name with its limits.
func (s *Spec) conditionOf(name string) (condition.Condition, error) {
	limits := s.Limits
	var c condition.Condition
	var err error
	if cc, ok := s.CustomConditions[name]; ok {
		c, err = condition.New(name, cc.Components)
		if cc.Limits != nil {
			limits = cc.Limits
		}
		if cc.Context != nil {
			c.Context = *cc.Context
		}
	} else {
		c, err = condition.Parse(name)
	}
	if err != nil {
		return condition.Condition{}, err
	}
	if limits != nil {
		c.Limits = limits.apply(c.Limits)
	}
	return c, nil
}

// apply overrides the non-zero fields of base.
func (l Limits) apply(base condition.Limits) condition.Limits {
	if l.MaxRetries != 0 {
		base.MaxRetries = l.MaxRetries
	}
	if l.MaxPlanReprompts != 0 {
		base.MaxPlanReprompts = l.MaxPlanReprompts
	}
	if l.MaxRepairTurns != 0 {
		base.MaxRepairTurns = l.MaxRepairTurns
	}
	if l.TokenBudget != 0 {
		base.TokenBudget = l.TokenBudget
	}
	if l.MaxSteps != 0 {
		base.MaxSteps = l.MaxSteps
	}
	return base
}

func validateLimits(ps *problems, field string, l Limits) {
	check := func(name string, v int64) {
		if v < 0 {
			ps.add(field+"."+name, "must not be negative, got %d", v)
		}
	}
	check("max_retries", int64(l.MaxRetries))
	check("max_plan_reprompts", int64(l.MaxPlanReprompts))
	check("max_repair_turns", int64(l.MaxRepairTurns))
	check("token_budget", l.TokenBudget)
	check("max_steps", int64(l.MaxSteps))
}

func checkModelName(name string) string {
	if name == "" {
		return "empty model name"
	}
	if len(name) > maxModelName {
		return fmt.Sprintf("model name longer than %d bytes", maxModelName)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return fmt.Sprintf("model name %q contains whitespace or a control character", name)
		}
	}
	return ""
}

func (s *Spec) validateEndpoints(ps *problems) {
	if len(s.Endpoints) == 0 {
		ps.add("endpoints", "no endpoints: add {\"sim\": {\"sim\": true}} for the simulated models, or an OpenAI-compatible base_url")
		return
	}
	servedBy := map[string]string{}
	sims := simulatedModels()
	for _, name := range sortedKeys(s.Endpoints) {
		e := s.Endpoints[name]
		f := "endpoints." + name
		if err := events.ValidateToken(f, name); err != nil {
			ps.add(f, "endpoint name: %s", tokenMsg(err))
		}
		if e.Sim {
			if e.BaseURL != "" || e.APIKeyEnv != "" {
				ps.add(f, "a sim endpoint takes no base_url or api_key_env (the worker hosts the simulated models)")
			}
		} else {
			if e.BaseURL == "" {
				ps.add(f+".base_url", "required (or \"sim\": true for the simulated models)")
			} else if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				ps.add(f+".base_url", "%q is not an http(s) URL", e.BaseURL)
			} else if u.User != nil {
				ps.add(f+".base_url", "must not contain credentials; name the key's environment variable with api_key_env")
			}
			if e.APIKeyEnv != "" && !isEnvName(e.APIKeyEnv) {
				// The value is not echoed: someone may have pasted the key itself.
				ps.add(f+".api_key_env", "must be the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), never the key")
			}
		}
		if len(e.Models) == 0 {
			ps.add(f+".models", "lists no model")
		}
		for i, m := range e.Models {
			mf := fmt.Sprintf("%s.models[%d]", f, i)
			if msg := checkModelName(m); msg != "" {
				ps.add(mf, "%s", msg)
				continue
			}
			if other, dup := servedBy[m]; dup {
				ps.add(mf, "model %q is also served by endpoint %s; a model must have one endpoint", m, other)
				continue
			}
			servedBy[m] = name
			if e.Sim && !slices.Contains(sims, m) {
				ps.add(mf, "%q is not a simulated model (the simulated models are %s)", m, strings.Join(sims, ", "))
			}
		}
		if e.TimeoutSeconds < 0 || math.IsNaN(e.TimeoutSeconds) || math.IsInf(e.TimeoutSeconds, 0) {
			ps.add(f+".timeout_seconds", "must be a finite number >= 0")
		}
		if e.MaxRetries < 0 {
			ps.add(f+".max_retries", "must not be negative")
		}
	}
}

func (s *Spec) validateCustomConditions(ps *problems) {
	for _, name := range sortedKeys(s.CustomConditions) {
		cc := s.CustomConditions[name]
		f := "custom_conditions." + name
		if err := events.ValidateToken(f, name); err != nil {
			ps.add(f, "condition name: %s", tokenMsg(err))
		}
		switch name {
		case condition.Baseline, condition.Harness, condition.HarnessSP:
			ps.add(f, "%q is a named condition and cannot be redefined", name)
		}
		known := condition.ComponentNames()
		seen := map[string]bool{}
		for i, comp := range cc.Components {
			cf := fmt.Sprintf("%s.components[%d]", f, i)
			switch {
			case !slices.Contains(known, comp):
				ps.add(cf, "unknown component %q (known: %s)", comp, strings.Join(known, ", "))
			case seen[comp]:
				ps.add(cf, "duplicate component %q", comp)
			}
			seen[comp] = true
		}
		if cc.Limits != nil {
			validateLimits(ps, f+".limits", *cc.Limits)
		}
		if cc.Context != nil {
			if err := cc.Context.Validate(); err != nil {
				ps.add(f+".context", "%v", err)
			}
		}
	}
}

func (s *Spec) validateSampling(ps *problems) {
	if t := s.Sampling.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		ps.add("sampling.temperature", "%v, want a value in [0, 2]", *t)
	}
	if p := s.Sampling.TopP; p != nil && (math.IsNaN(*p) || *p <= 0 || *p > 1) {
		ps.add("sampling.top_p", "%v, want a value in (0, 1]", *p)
	}
	if s.Sampling.MaxTokens < 0 {
		ps.add("sampling.max_tokens", "must not be negative, got %d", s.Sampling.MaxTokens)
	}
}

func (s *Spec) validateInputs(ps *problems) {
	used := s.usedTasks()
	check := func(field string, inputs []int, taskNames []string) {
		if len(inputs) == 0 {
			ps.add(field, "empty: give at least one input instance index")
		}
		for i, idx := range inputs {
			f := fmt.Sprintf("%s[%d]", field, i)
			if idx < 0 {
				ps.add(f, "negative instance index %d", idx)
				continue
			}
			for _, tn := range taskNames {
				t, err := s.task(tn)
				if err != nil {
					continue // reported with the task
				}
				if idx >= len(t.Instances) {
					ps.add(f, "instance %d is out of range for task %s (it has %d: 0..%d)", idx, tn, len(t.Instances), len(t.Instances)-1)
				}
			}
		}
	}
	var defaultTasks []string
	for _, t := range used {
		if _, ok := s.TaskInputs[t]; !ok {
			defaultTasks = append(defaultTasks, t)
		}
	}
	check("inputs", s.Inputs, defaultTasks)
	for _, tn := range sortedKeys(s.TaskInputs) {
		f := "task_inputs." + tn
		if !slices.Contains(used, tn) {
			ps.add(f, "task %q is not in the study", tn)
			continue
		}
		check(f, s.TaskInputs[tn], []string{tn})
	}
}

// usedTasks returns the distinct tasks of the study, in order of first use.
func (s *Spec) usedTasks() []string {
	var out []string
	add := func(t string) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, t := range s.Tasks {
		add(t)
	}
	for _, c := range s.Cells {
		add(c.Task)
	}
	return out
}

func (s *Spec) totalRuns() int64 {
	var n int64
	if s.Runs > 0 {
		n = int64(len(s.Tasks)) * int64(len(s.Models)) * int64(len(s.Conditions)) * int64(s.Runs)
	}
	for _, c := range s.Cells {
		r := c.Runs
		if r == 0 {
			r = s.Runs
		}
		if r > 0 {
			n += int64(r)
		}
	}
	return n
}

func isEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// tokenMsg strips the events sentinel's prefix from a token error, keeping its detail.
func tokenMsg(err error) string {
	if fe, ok := err.(*events.FieldError); ok {
		return "not subject-safe: " + fe.Msg
	}
	return err.Error()
}

// simulatedModels are the names of the default simulated personas, sorted.
func simulatedModels() []string { return personas.Names() }
