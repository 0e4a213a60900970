package harness

import (
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

func TestParsePlan(t *testing.T) {
	credit, _ := tasks.Get("credit_ecl")
	aml, _ := tasks.Get("aml_screening")
	step := func(s, tool string) string { return `{"state":"` + s + `","intended_tool":"` + tool + `"}` }
	full := "[" + step("LOAD_DATA", "load_portfolio") + "," + step("VALIDATE_DATA", "validate_portfolio") + "," +
		step("CALCULATE", "calculate_ecl") + "," + step("GENERATE_REPORT", "generate_ecl_report") + "]"
	tests := []struct {
		name    string
		task    *tasks.Task
		give    string
		wantErr string // substring of one error; "" = valid
	}{
		{"full path", credit, full, ""},
		{"wrapped", credit, `{"plan":` + full + `}`, ""},
		{"whitespace", credit, "\n " + full + " \n", ""},
		{"aml hit path", aml, "[" + step("LOAD_DATA", "load_customer") + "," + step("SCREEN", "screen_watchlists") + "," +
			step("ENHANCED_REVIEW", "enhanced_review") + "," + step("GENERATE_REPORT", "generate_aml_report") + "]", ""},
		{"aml clean path", aml, "[" + step("LOAD_DATA", "load_customer") + "," + step("SCREEN", "screen_watchlists") + "," +
			step("GENERATE_REPORT", "generate_aml_report") + "]", ""},
		{"aml skips screening", aml, "[" + step("LOAD_DATA", "load_customer") + "," + step("GENERATE_REPORT", "generate_aml_report") + "]", "no transition"},
		{"empty", credit, "", "empty"},
		{"not json", credit, "[{", "not a JSON array"},
		{"markdown", credit, "```json\n" + full + "\n```", "not a JSON array"},
		{"no steps", credit, "[]", "no steps"},
		{"wrong tool", credit, strings.Replace(full, `"calculate_ecl"`, `"load_portfolio"`, 1), "uses tool calculate_ecl"},
		{"wrong start", credit, "[" + step("VALIDATE_DATA", "validate_portfolio") + "," + step("CALCULATE", "calculate_ecl") + "," +
			step("GENERATE_REPORT", "generate_ecl_report") + "]", "must start at LOAD_DATA"},
		{"not terminal", credit, "[" + step("LOAD_DATA", "load_portfolio") + "]", "not a final state"},
		{"unknown state", credit, strings.Replace(full, `"CALCULATE"`, `"COMPUTE"`, 1), "unknown state"},
		{"extra field", credit, `[{"state":"LOAD_DATA","intended_tool":"load_portfolio","why":"x"}]`, "unexpected field"},
		{"tool key", credit, `[{"state":"LOAD_DATA","tool":"load_portfolio"}]`, "unexpected field"},
		{"wrapped with more", credit, `{"plan":` + full + `,"note":1}`, "single field"},
		{"number state", credit, `[{"state":1,"intended_tool":"load_portfolio"}]`, "must be a string"},
	}
	for _, tt := range tests {
		steps, errs := parsePlan(tt.task, tt.give)
		if tt.wantErr == "" {
			if len(errs) > 0 || len(steps) == 0 {
				t.Errorf("%s: parsePlan = %v, want valid", tt.name, errs)
			}
			continue
		}
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e, tt.wantErr)
		}
		if !found || steps != nil {
			t.Errorf("%s: parsePlan errors = %v, want one containing %q", tt.name, errs, tt.wantErr)
		}
	}
}
