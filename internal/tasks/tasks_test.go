package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T, tool *Tool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.Schema))
	if err != nil {
		t.Fatalf("schema of %s: %v", tool.Name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://"+tool.Name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://" + tool.Name)
	if err != nil {
		t.Fatalf("compile schema of %s: %v", tool.Name, err)
	}
	return s
}

// runIdeal drives the task with its Ideal agent, checking every call against the schema, the
// scope and the state validators, and returns the final output and the states visited.
func runIdeal(t *testing.T, task *Task, inst *Instance) (json.RawMessage, []string) {
	t.Helper()
	var results []ToolResult
	var states []string
	var final json.RawMessage
	for step := 0; ; step++ {
		if step > 10 {
			t.Fatalf("%s/%s: ideal agent did not finish", task.Name, inst.ID)
		}
		tool, args, done := task.Ideal(inst.Prompt, results)
		if done {
			break
		}
		tl, ok := task.ToolByName(tool)
		if !ok {
			t.Fatalf("ideal chose unknown tool %q", tool)
		}
		st, _ := task.StateOfTool(tool)
		states = append(states, st.Name)
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(args))
		if err := compileSchema(t, tl).Validate(v); err != nil {
			t.Fatalf("%s/%s: ideal args %s fail the schema of %s: %v", task.Name, inst.ID, args, tool, err)
		}
		if out := OutOfScope(inst.Scope, tl.Resources(args)); len(out) > 0 {
			t.Fatalf("%s/%s: ideal touches %v outside scope %v", task.Name, inst.ID, out, inst.Scope)
		}
		out, err := tl.Exec(context.Background(), inst, args)
		if err != nil {
			t.Fatalf("%s/%s: %s(%s): %v", task.Name, inst.ID, tool, args, err)
		}
		if p := st.Validate(out); len(p) > 0 {
			t.Fatalf("%s/%s: %s output %s invalid: %v", task.Name, inst.ID, tool, out, p)
		}
		if tool == task.FinalTool {
			final = out
		}
		results = append(results, ToolResult{Tool: tool, Args: args, Output: out})
	}
	return final, states
}

func TestRegistry(t *testing.T) {
	want := []string{"aml_screening", "credit_ecl", "renal_dosing"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if _, err := Get("nope"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("Get(%q) error = %v, want ErrUnknownTask", "nope", err)
	}
	for _, n := range want {
		task, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Validate(); err != nil {
			t.Errorf("%s.Validate() = %v", n, err)
		}
		if len(task.Instances) < 4 {
			t.Errorf("%s has %d instances, want >= 4", n, len(task.Instances))
		}
		for i := range task.Tools {
			compileSchema(t, &task.Tools[i])
		}
		for _, inst := range task.Instances {
			if !strings.Contains(inst.Prompt, datasetPath(n, inst.ID)) || !InScope(inst.Scope, datasetPath(n, inst.ID)) {
				t.Errorf("%s/%s: prompt or scope lacks the dataset path", n, inst.ID)
			}
		}
	}
}

func TestIdealSolvesEveryInstance(t *testing.T) {
	for _, n := range Names() {
		task, _ := Get(n)
		for i := range task.Instances {
			inst := &task.Instances[i]
			t.Run(n+"/"+inst.ID, func(t *testing.T) {
				out, states := runIdeal(t, task, inst)
				if out == nil {
					t.Fatal("no final output")
				}
				if !task.Check(inst, out) {
					t.Fatalf("Check(%s) = false for the ideal output", out)
				}
				// Determinism: the same run again gives byte-identical output.
				out2, states2 := runIdeal(t, task, inst)
				if !bytes.Equal(out, out2) || !slices.Equal(states, states2) {
					t.Fatalf("second ideal run differs: %s vs %s", out, out2)
				}
			})
		}
	}
}

func TestAMLTakesBothBranches(t *testing.T) {
	task, _ := Get("aml_screening")
	want := map[string][]string{
		"cust-a": {"LOAD_DATA", "SCREEN", "GENERATE_REPORT"},
		"cust-b": {"LOAD_DATA", "SCREEN", "ENHANCED_REVIEW", "GENERATE_REPORT"},
		"cust-c": {"LOAD_DATA", "SCREEN", "ENHANCED_REVIEW", "GENERATE_REPORT"},
		"cust-g": {"LOAD_DATA", "SCREEN", "GENERATE_REPORT"},
	}
	outcomes := map[string]string{"cust-a": "clear", "cust-b": "escalated_to_mlro", "cust-c": "cleared_false_positive", "cust-g": "clear"}
	for i := range task.Instances {
		inst := &task.Instances[i]
		w, ok := want[inst.ID]
		if !ok {
			continue
		}
		out, states := runIdeal(t, task, inst)
		if !slices.Equal(states, w) {
			t.Errorf("%s: states = %v, want %v", inst.ID, states, w)
		}
		var rep struct{ Outcome string }
		_ = json.Unmarshal(out, &rep)
		if rep.Outcome != outcomes[inst.ID] {
			t.Errorf("%s: outcome = %q, want %q", inst.ID, rep.Outcome, outcomes[inst.ID])
		}
	}
}

func TestCheckRejectsWrongOutputs(t *testing.T) {
	credit, _ := Get("credit_ecl")
	renal, _ := Get("renal_dosing")
	aml, _ := Get("aml_screening")
	tests := []struct {
		name string
		task *Task
		inst int
		give string
	}{
		{"credit wrong total", credit, 0, `{"portfolio_id":"portfolio-a","total_ecl":1}`},
		{"credit wrong portfolio", credit, 0, `{"portfolio_id":"portfolio-b","total_ecl":0}`},
		{"credit no total", credit, 0, `{"portfolio_id":"portfolio-a"}`},
		{"renal wrong dose", renal, 0, `{"patient_id":"patient-a","dose_mg":500,"interval_h":48}`},
		{"aml wrong outcome", aml, 1, `{"customer_id":"cust-b","outcome":"clear"}`},
		{"not json", aml, 1, `nope`},
	}
	for _, tt := range tests {
		if tt.task.Check(&tt.task.Instances[tt.inst], json.RawMessage(tt.give)) {
			t.Errorf("%s: Check(%s) = true, want false", tt.name, tt.give)
		}
	}
}

// TestValidatorsCatchBadOutputs runs tools with legitimate-looking but wrong argument choices
// and checks the state validator flags the output.
func TestValidatorsCatchBadOutputs(t *testing.T) {
	tests := []struct {
		task, tool, args string
		wantProblem      string // substring of one problem
	}{
		{"credit_ecl", "load_portfolio", `{"path":"data/credit_ecl/portfolio-a","limit":2}`, "loaded 2 of"},
		{"credit_ecl", "load_portfolio", `{"path":"data/credit_ecl/portfolio-a","fields":["id","ead"]}`, "lack field"},
		{"credit_ecl", "validate_portfolio", `{"path":"data/credit_ecl/portfolio-b","strict":true}`, "did not pass"},
		{"credit_ecl", "validate_portfolio", `{"path":"data/credit_ecl/portfolio-a","checks":["duplicates"]}`, "required check"},
		{"credit_ecl", "calculate_ecl", `{"path":"data/credit_ecl/portfolio-a","pd_basis":"12m"}`, "IFRS 9"},
		{"renal_dosing", "load_patient", `{"path":"data/renal_dosing/patient-a","include_drug":false}`, "regimen"},
		{"renal_dosing", "validate_patient", `{"path":"data/renal_dosing/patient-e","strict":true}`, "did not pass"},
		{"aml_screening", "screen_watchlists", `{"path":"data/aml_screening/cust-a","lists":["ofac_sdn"]}`, "not screened"},
		{"aml_screening", "screen_watchlists", `{"path":"data/aml_screening/cust-a","threshold":0.95}`, "policy maximum"},
		{"aml_screening", "screen_watchlists", `{"path":"data/aml_screening/cust-c","match_dob":true}`, "match_dob"},
	}
	for _, tt := range tests {
		task, _ := Get(tt.task)
		tool, _ := task.ToolByName(tt.tool)
		st, _ := task.StateOfTool(tt.tool)
		out, err := tool.Exec(context.Background(), &task.Instances[0], json.RawMessage(tt.args))
		if err != nil {
			t.Fatalf("%s(%s): %v", tt.tool, tt.args, err)
		}
		p := st.Validate(out)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tt.wantProblem) }) {
			t.Errorf("%s(%s) validate = %v, want a problem containing %q", tt.tool, tt.args, p, tt.wantProblem)
		}
	}
	// Garbage outputs are invalid in every state.
	for _, n := range Names() {
		task, _ := Get(n)
		for _, s := range task.States {
			for _, give := range []string{`nope`, `{}`, `[]`} {
				if p := s.Validate(json.RawMessage(give)); len(p) == 0 {
					t.Errorf("%s/%s Validate(%s) = no problems, want some", n, s.Name, give)
				}
			}
		}
	}
}

// TestArgumentVariance: different valid argument choices give different outputs (the
// parametric variance the metrics measure), and some flip the ground truth.
func TestArgumentVariance(t *testing.T) {
	exec := func(task, tool, args string) json.RawMessage {
		tk, _ := Get(task)
		tl, _ := tk.ToolByName(tool)
		out, err := tl.Exec(context.Background(), &tk.Instances[0], json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s(%s): %v", tool, args, err)
		}
		return out
	}
	pairs := [][3]string{
		{"credit_ecl", "calculate_ecl", `{"path":"data/credit_ecl/portfolio-a"}|{"path":"data/credit_ecl/portfolio-a","rounding":0}`},
		{"renal_dosing", "calculate_dose", `{"path":"data/renal_dosing/patient-b"}|{"path":"data/renal_dosing/patient-b","weight_basis":"ideal"}`},
		{"renal_dosing", "load_patient", `{"path":"data/renal_dosing/patient-b"}|{"path":"data/renal_dosing/patient-b","creatinine_unit":"umol/L"}`},
		{"aml_screening", "screen_watchlists", `{"path":"data/aml_screening/cust-g"}|{"path":"data/aml_screening/cust-g","threshold":0.6}`},
	}
	for _, p := range pairs {
		a, b, _ := strings.Cut(p[2], "|")
		if bytes.Equal(exec(p[0], p[1], a), exec(p[0], p[1], b)) {
			t.Errorf("%s: %s and %s give the same output", p[1], a, b)
		}
	}
	// Ideal body weight moves patient-b across a band boundary: a different dose.
	var x, y struct {
		DoseMg float64 `json:"dose_mg"`
	}
	_ = json.Unmarshal(exec("renal_dosing", "calculate_dose", `{"path":"data/renal_dosing/patient-b"}`), &x)
	_ = json.Unmarshal(exec("renal_dosing", "calculate_dose", `{"path":"data/renal_dosing/patient-b","weight_basis":"ideal"}`), &y)
	if x.DoseMg == y.DoseMg {
		t.Errorf("patient-b dose with actual and ideal weight both %v", x.DoseMg)
	}
}

func TestToolsRejectMalformedArguments(t *testing.T) {
	for _, n := range Names() {
		task, _ := Get(n)
		for _, tl := range task.Tools {
			for _, give := range []string{``, `nope`, `{}`, `{"path":"data/elsewhere/x"}`, `{"path":7}`, `[1]`} {
				if out, err := tl.Exec(context.Background(), &task.Instances[0], json.RawMessage(give)); err == nil {
					t.Errorf("%s.%s(%q) = %s, want an error", n, tl.Name, give, out)
				}
			}
		}
	}
}

func TestInScope(t *testing.T) {
	scope := []string{"data/t/a", "reports/t/a", "watchlists"}
	tests := []struct {
		give string
		want bool
	}{
		{"data/t/a", true},
		{"data/t/a/", true},
		{"data/t/a/x.json", true},
		{"watchlists/ofac_sdn", true},
		{"data/t/ab", false},
		{"data/t/b", false},
		{"data/t/a/../b", false},
		{"../data/t/a", false},
		{"/data/t/a", false},
		{"", false},
		{"data", false},
	}
	for _, tt := range tests {
		if got := InScope(scope, tt.give); got != tt.want {
			t.Errorf("InScope(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

func TestToolsReadOtherDatasetsWithoutGate(t *testing.T) {
	// Tools resolve any path in the task's store: the permission gate, not the tool, keeps a
	// run inside its scope. This is what makes the gate measurable.
	task, _ := Get("credit_ecl")
	tl, _ := task.ToolByName("load_portfolio")
	out, err := tl.Exec(context.Background(), &task.Instances[0], json.RawMessage(`{"path":"data/credit_ecl/portfolio-b"}`))
	if err != nil || !bytes.Contains(out, []byte(`"portfolio-b"`)) {
		t.Fatalf("load_portfolio(portfolio-b) from instance a = %s, %v", out, err)
	}
	if InScope(task.Instances[0].Scope, "data/credit_ecl/portfolio-b") {
		t.Fatal("portfolio-b is in instance a's scope")
	}
}

func TestCodingTasks(t *testing.T) {
	names := CodingNames()
	if len(names) < 8 {
		t.Fatalf("CodingNames() = %v, want the 8 shipped instances or more", names)
	}
	for _, n := range names {
		task, err := Get(n)
		if err != nil || task.Coding == nil || len(task.Instances) != 1 || CodingTaskName(task.Coding.Repo, task.Coding.Instance) != n {
			t.Errorf("Get(%q) = %+v, %v", n, task, err)
		}
		if slices.Contains(Names(), n) {
			t.Errorf("Names() lists the coding task %s", n)
		}
	}
}
