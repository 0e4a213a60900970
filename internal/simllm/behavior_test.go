package simllm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

// exactPersona never deviates: it is the ideal agent behind an OpenAI API.
func exactPersona() Persona {
	return Persona{Name: "sim-exact", Fingerprint: "fp_exact", RepairFactor: 1}
}

func allTasks(t *testing.T) []*tasks.Task {
	t.Helper()
	var out []*tasks.Task
	for _, n := range tasks.Names() {
		task, err := tasks.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, task)
	}
	if len(out) < 3 {
		t.Fatalf("tasks.Names() = %v, want the three tasks", tasks.Names())
	}
	return out
}

// signature is a run's tool sequence with canonical arguments.
func signature(rs []tasks.ToolResult) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Tool)
		b.WriteString(fmt.Sprint(canonicalText(string(r.Args))))
		b.WriteString(";")
	}
	return b.String()
}

// TestKnowsEveryTask: a persona without variance does every task on every instance like the
// ideal agent, free to choose its tools: the run passes the ground-truth check, and its JSON
// plan, made before any tool ran, names exactly the states the run then went through — also on
// the branching task, whose path depends on the data.
func TestKnowsEveryTask(t *testing.T) {
	s := mustServer(t, Config{Personas: []Persona{exactPersona()}})
	for _, task := range allTasks(t) {
		paths := map[string]bool{}
		for i := range task.Instances {
			inst := &task.Instances[i]
			l := drive(t, s, "sim-exact", task, inst, 1, runOpts{jsonPlan: true})
			if l.final == nil || !task.Check(inst, l.final) {
				t.Errorf("%s/%s: final output %s fails the check (calls %v)", task.Name, inst.ID, l.final, toolNames(l.calls))
			}
			var plan struct {
				Plan []struct{ State, Intended_tool string } `json:"plan"`
			}
			if err := json.Unmarshal([]byte(l.plan), &plan); err != nil {
				t.Fatalf("%s/%s: plan %q: %v", task.Name, inst.ID, l.plan, err)
			}
			var planned, ran []string
			for _, p := range plan.Plan {
				planned = append(planned, p.Intended_tool)
			}
			for _, c := range l.calls {
				ran = append(ran, c.Tool)
				if c.Err != "" {
					t.Errorf("%s/%s: call %s failed: %s", task.Name, inst.ID, c.Tool, c.Err)
				}
			}
			if !slices.Equal(planned, ran) {
				t.Errorf("%s/%s: plan %v, ran %v", task.Name, inst.ID, planned, ran)
			}
			paths[strings.Join(ran, ">")] = true
		}
		if task.Name == "aml_screening" && len(paths) < 2 {
			t.Errorf("aml_screening: every instance took the same path %v, want both branches", paths)
		}
	}
}

// TestForcedToolIsAlwaysHonored: whatever the persona and temperature, a tool_choice naming a
// function gets a call of that function.
func TestForcedToolIsAlwaysHonored(t *testing.T) {
	s := mustServer(t, Config{})
	calls := 0
	for _, task := range allTasks(t) {
		for seed := range int64(25) {
			l := drive(t, s, "sim-wobbly", task, &task.Instances[int(seed)%len(task.Instances)], seed, runOpts{forced: true, temperature: new(2.0)})
			if l.violations > 0 {
				t.Errorf("%s seed %d: %d calls ignored the forced tool", task.Name, seed, l.violations)
			}
			calls += len(l.calls)
		}
	}
	if calls < 200 {
		t.Errorf("only %d forced calls observed", calls)
	}
}

// deviations counts, over n seeded runs, those whose calls differ from the ideal run's.
func deviations(t *testing.T, s *Server, model string, task *tasks.Task, temp float64, n int, o runOpts) (deviating, distinct int) {
	t.Helper()
	inst := &task.Instances[0]
	ideal := signature(drive(t, mustServer(t, Config{Personas: []Persona{exactPersona()}}), "sim-exact", task, inst, 0, runOpts{}).calls)
	seen := map[string]bool{}
	o.temperature = &temp
	for seed := range int64(n) {
		sig := signature(drive(t, s, model, task, inst, seed+100, o).calls)
		seen[sig] = true
		if sig != ideal {
			deviating++
		}
	}
	return deviating, len(seen)
}

// TestVarianceOrdering: the wobbly persona deviates more than the steady one, and temperature 0
// reduces a persona's deviations without removing them.
func TestVarianceOrdering(t *testing.T) {
	s := mustServer(t, Config{})
	n := 120
	if testing.Short() {
		n = 60
	}
	task, _ := tasks.Get("credit_ecl")
	steady1, steadyDistinct := deviations(t, s, "sim-steady", task, 1, n, runOpts{})
	wobbly1, wobblyDistinct := deviations(t, s, "sim-wobbly", task, 1, n, runOpts{})
	wobbly0, _ := deviations(t, s, "sim-wobbly", task, 0, n, runOpts{})
	steady0, _ := deviations(t, s, "sim-steady", task, 0, n, runOpts{})
	t.Logf("deviating runs of %d: steady T=1 %d (distinct %d), T=0 %d; wobbly T=1 %d (distinct %d), T=0 %d",
		n, steady1, steadyDistinct, steady0, wobbly1, wobblyDistinct, wobbly0)
	if !(steady1 < wobbly1) || !(steadyDistinct < wobblyDistinct) {
		t.Errorf("steady deviates in %d runs (%d distinct), wobbly in %d (%d distinct): want steady < wobbly", steady1, steadyDistinct, wobbly1, wobblyDistinct)
	}
	if !(wobbly0 < wobbly1) || !(steady0 <= steady1) {
		t.Errorf("temperature 0 deviations: wobbly %d (T=1 %d), steady %d (T=1 %d): want fewer at T=0", wobbly0, wobbly1, steady0, steady1)
	}
	if wobbly0 == 0 {
		t.Errorf("wobbly at temperature 0 never deviates in %d runs: temperature 0 should reduce variance, not remove it", n)
	}
}

// TestSkipsAndReordersWhenFree: offered every tool with tool_choice auto, the wobbly persona
// sometimes jumps a step and then either goes back for it (a reorder) or leaves it out (a
// skip); with the tool forced it never does.
func TestSkipsAndReordersWhenFree(t *testing.T) {
	s := mustServer(t, Config{})
	task, _ := tasks.Get("renal_dosing")
	ideal := []string{"load_patient", "validate_patient", "calculate_dose", "generate_dosing_report"}
	var reorders, skips int
	n := int64(150)
	if testing.Short() {
		n = 100
	}
	for seed := range n {
		l := drive(t, s, "sim-wobbly", task, &task.Instances[0], seed, runOpts{})
		var ok []string // successful calls, in order, first occurrence only
		for _, c := range l.calls {
			if c.Err == "" && !slices.Contains(ok, c.Tool) {
				ok = append(ok, c.Tool)
			}
		}
		sorted := slices.Clone(ok)
		slices.SortFunc(sorted, func(a, b string) int { return slices.Index(ideal, a) - slices.Index(ideal, b) })
		switch {
		case len(ok) == len(ideal) && !slices.Equal(ok, ideal):
			reorders++
		case len(ok) < len(ideal) && slices.Contains(ok, ideal[len(ideal)-1]):
			skips++
		}
	}
	if reorders == 0 || skips == 0 {
		t.Errorf("%d free runs: %d reorders, %d skips; want both", n, reorders, skips)
	}
}

// planRequest is a structured-plan request for the task's first instance.
func planRequest(task *tasks.Task, model string, seed int64, rf map[string]any, repairs int) []byte {
	msgs := []map[string]any{
		{"role": "system", "content": task.Instructions},
		{"role": "user", "content": task.Instances[0].Prompt},
		{"role": "user", "content": "Before using any tool, return your plan as a JSON array."},
	}
	for range repairs {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "[]"},
			map[string]any{"role": "user", "content": "Your plan was rejected: the plan has no steps. Return a corrected plan."})
	}
	b, _ := json.Marshal(map[string]any{"model": model, "seed": seed, "messages": msgs, "response_format": rf})
	return b
}

// harnessPlanSchema is the schema the harness sends: a bare array with enums of the graph's
// names (see internal/harness/plan.go).
func harnessPlanSchema(task *tasks.Task) json.RawMessage {
	var states, tools []string
	for _, s := range task.States {
		states = append(states, s.Name)
		tools = append(tools, s.Tool)
	}
	b, _ := json.Marshal(map[string]any{"type": "array", "minItems": 1, "items": map[string]any{
		"type": "object", "required": []string{"state", "intended_tool"}, "additionalProperties": false,
		"properties": map[string]any{"state": map[string]any{"type": "string", "enum": states}, "intended_tool": map[string]any{"type": "string", "enum": tools}},
	}})
	return b
}

// TestJSONPlans: plans follow the requested shape; the wobbly persona malforms some; under a
// strict schema every plan is still schema-valid JSON (only graph errors remain); re-prompts
// make malformed plans rarer.
func TestJSONPlans(t *testing.T) {
	s := mustServer(t, Config{})
	task, _ := tasks.Get("credit_ecl")
	arraySchema := harnessPlanSchema(task)
	sch := validatorFor(arraySchema)
	idealPlan := `[{"intended_tool":"load_portfolio","state":"LOAD_DATA"},{"intended_tool":"validate_portfolio","state":"VALIDATE_DATA"},{"intended_tool":"calculate_ecl","state":"CALCULATE"},{"intended_tool":"generate_ecl_report","state":"GENERATE_REPORT"}]`
	count := func(model string, strict bool, repairs int, n int) (notJSON, schemaInvalid, wrongPath int) {
		rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "structured_plan", "schema": arraySchema, "strict": strict}}
		for seed := range int64(n) {
			resp, _, aerr := s.complete(t.Context(), planRequest(task, model, seed, rf, repairs))
			if aerr != nil {
				t.Fatal(aerr.Message)
			}
			content := *resp.Choices[0].Message.Content
			v := canonicalText(content)
			if str, ok := v.(string); ok && strings.HasPrefix(str, "invalid:") {
				notJSON++
				continue
			}
			if !valid(sch, v) {
				schemaInvalid++
				continue
			}
			if b, _ := json.Marshal(v); string(b) != idealPlan {
				wrongPath++
			}
		}
		return
	}
	n := 300
	if testing.Short() {
		n = 150
	}
	nj, si, wp := count("sim-wobbly", false, 0, n)
	t.Logf("wobbly, not strict: %d not JSON, %d schema-invalid, %d wrong path of %d", nj, si, wp, n)
	if nj == 0 || si == 0 || wp == 0 {
		t.Errorf("wobbly non-strict plans: %d not JSON, %d schema-invalid, %d wrong path; want some of each", nj, si, wp)
	}
	snj, ssi, swp := count("sim-wobbly", true, 0, n)
	if snj != 0 || ssi != 0 || swp == 0 {
		t.Errorf("wobbly strict plans: %d not JSON, %d schema-invalid, %d wrong path; want only wrong paths", snj, ssi, swp)
	}
	rnj, rsi, rwp := count("sim-wobbly", false, 2, n)
	if bad, rbad := nj+si+wp, rnj+rsi+rwp; !(rbad < bad) {
		t.Errorf("after 2 rejected plans %d of %d plans are bad, first attempts %d: want fewer", rbad, n, bad)
	}
	a, b, w := count("sim-steady", false, 0, n)
	if steadyBad := a + b + w; !(steadyBad < nj+si+wp) {
		t.Errorf("steady malformed %d plans, wobbly %d: want steady fewer", steadyBad, nj+si+wp)
	}

	// Other shapes: an object wrapping the array, and json_object mode (which must produce an
	// object, so the array is wrapped as {"plan": [...]}).
	ex := mustServer(t, Config{Personas: []Persona{exactPersona()}})
	for _, rf := range []map[string]any{
		{"type": "json_schema", "json_schema": map[string]any{"name": "plan", "schema": planSchema}},
		{"type": "json_object"},
	} {
		resp, _, aerr := ex.complete(t.Context(), planRequest(task, "sim-exact", 1, rf, 0))
		if aerr != nil {
			t.Fatal(aerr.Message)
		}
		var wrapped struct {
			Plan json.RawMessage `json:"plan"`
		}
		content := *resp.Choices[0].Message.Content
		if err := json.Unmarshal([]byte(content), &wrapped); err != nil {
			t.Fatalf("%v: %q: %v", rf["type"], content, err)
		}
		if b, _ := json.Marshal(canonicalAny(wrapped.Plan)); string(b) != idealPlan {
			t.Errorf("%v: plan %s, want %s", rf["type"], b, idealPlan)
		}
	}
}

// TestFreeTextPlans: free-text plans are worded differently, more so by the wobbly persona.
func TestFreeTextPlans(t *testing.T) {
	s := mustServer(t, Config{})
	task, _ := tasks.Get("aml_screening")
	distinct := func(model string, temp float64) int {
		seen := map[string]bool{}
		for seed := range int64(80) {
			msgs := []map[string]any{
				{"role": "system", "content": task.Instructions},
				{"role": "user", "content": task.Instances[0].Prompt},
				{"role": "user", "content": "Before using any tool, describe your plan in a few sentences."},
			}
			b, _ := json.Marshal(map[string]any{"model": model, "seed": seed, "temperature": temp, "messages": msgs})
			resp, _, aerr := s.complete(t.Context(), b)
			if aerr != nil {
				t.Fatal(aerr.Message)
			}
			c := *resp.Choices[0].Message.Content
			if !strings.Contains(c, "load_customer") || strings.Contains(c, "%!") || resp.Choices[0].FinishReason != "stop" {
				t.Fatalf("plan %q does not name the first tool", c)
			}
			seen[c] = true
		}
		return len(seen)
	}
	st0, st1, wo1 := distinct("sim-steady", 0), distinct("sim-steady", 1), distinct("sim-wobbly", 1)
	t.Logf("distinct wordings of 80: steady T=0 %d, T=1 %d; wobbly T=1 %d", st0, st1, wo1)
	if !(st0 <= st1 && st1 < wo1) || st1 < 2 {
		t.Errorf("distinct wordings: steady T=0 %d, steady T=1 %d, wobbly %d; want increasing and >1", st0, st1, wo1)
	}
}
