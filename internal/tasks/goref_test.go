package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// The built-in tasks as they were written in Go before they became task files, kept as the
// reference the task files are checked against (reference_test.go's tests): the same
// instructions, prompts, tools, schemas, states, validators, routes, resources and checks.

const (
	creditLoadSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "dataset path of the portfolio, e.g. data/credit_ecl/portfolio-a"},
    "fields": {"type": "array", "items": {"enum": ["id", "stage", "pd_12m", "pd_lifetime", "lgd", "ead"]}, "uniqueItems": true, "description": "loan fields to return (default: all)"},
    "limit": {"type": "integer", "minimum": 1, "description": "return at most this many loans (default: all)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	creditValidateSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "checks": {"type": "array", "items": {"enum": ["ranges", "stages", "duplicates", "exposure"]}, "uniqueItems": true, "description": "checks to run (default: all)"},
    "strict": {"type": "boolean", "description": "treat warnings as errors (default false)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	creditCalcSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "pd_basis": {"enum": ["stage", "12m", "lifetime"], "description": "which PD to apply: stage (12-month for stage 1, lifetime for stages 2 and 3; default), or one basis for every loan"},
    "rounding": {"type": "integer", "minimum": 0, "maximum": 6, "description": "decimal places of the amounts (default 2)"},
    "include_loans": {"type": "boolean", "description": "include the per-loan ECL (default false)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	creditReportSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "total_ecl": {"type": "number", "minimum": 0, "description": "portfolio ECL as calculated"},
    "by_stage": {"type": "object", "properties": {"stage_1": {"type": "number"}, "stage_2": {"type": "number"}, "stage_3": {"type": "number"}}, "additionalProperties": false},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "precision": {"type": "integer", "minimum": 0, "maximum": 6, "description": "decimal places in the report (default 2)"},
    "format": {"enum": ["summary", "detailed"]},
    "output_path": {"type": "string", "description": "where to file the report (default reports/credit_ecl/<portfolio>)"}
  },
  "required": ["path", "total_ecl"],
  "additionalProperties": false
}`
)

func refCreditECL() *Task {
	st, stems := loadStore(creditTask)
	return build(st, stems, taskDef{
		name:  creditTask,
		title: "IFRS 9 expected credit loss of a loan portfolio",
		instructions: "You are a credit risk analyst. Compute the IFRS 9 expected credit loss (ECL) of the loan " +
			"portfolio named by the user and file the ECL report. Use the tools: load the portfolio, validate " +
			"the data, calculate the ECL (PD × LGD × EAD, 12-month PD for stage 1 and lifetime PD for stages 2 " +
			"and 3), then generate the report with the calculated figures. Only touch the datasets you are given.",
		prompt: "Compute the IFRS 9 expected credit loss for the loan portfolio at %s and file the ECL report.",
		states: []State{
			{Name: "LOAD_DATA", Tool: "load_portfolio", Next: []string{"VALIDATE_DATA"}, Validate: validateCreditLoad},
			{Name: "VALIDATE_DATA", Tool: "validate_portfolio", Next: []string{"CALCULATE"}, Validate: validateCreditValidation},
			{Name: "CALCULATE", Tool: "calculate_ecl", Next: []string{"GENERATE_REPORT"}, Validate: validateCreditCalc},
			{Name: "GENERATE_REPORT", Tool: "generate_ecl_report", Validate: validateCreditReport},
		},
		tools: []Tool{
			pathTool("load_portfolio", "Load a loan portfolio dataset.", creditLoadSchema, st.creditLoad),
			pathTool("validate_portfolio", "Run data-quality checks on a loan portfolio dataset.", creditValidateSchema, st.creditValidate),
			pathTool("calculate_ecl", "Calculate the expected credit loss of a loan portfolio.", creditCalcSchema, st.creditCalc),
			pathTool("generate_ecl_report", "Generate and file the IFRS 9 ECL report from calculated figures.", creditReportSchema, st.creditReport),
		},
		check: func(inst *Instance, output json.RawMessage) bool {
			var p portfolio
			var rep struct {
				PortfolioID string   `json:"portfolio_id"`
				TotalECL    *float64 `json:"total_ecl"`
			}
			if json.Unmarshal(refData(inst), &p) != nil || json.Unmarshal(output, &rep) != nil || rep.TotalECL == nil {
				return false
			}
			// Tolerance 1.0 currency unit: a report rounded to whole units is still correct.
			return rep.PortfolioID == p.PortfolioID && math.Abs(*rep.TotalECL-creditTruth(p)) <= 1.0
		},
		ideal: func(state, path string, results []ToolResult) map[string]any {
			args := map[string]any{"path": path}
			if state == "GENERATE_REPORT" {
				var calc struct {
					TotalECL float64            `json:"total_ecl"`
					ByStage  map[string]float64 `json:"by_stage"`
					Currency string             `json:"currency"`
				}
				decodeLast(results, "calculate_ecl", &calc)
				args["total_ecl"] = calc.TotalECL
				args["by_stage"] = calc.ByStage
				args["currency"] = calc.Currency
			}
			return args
		},
	})
}

// creditTruth is the ground-truth portfolio ECL (stage basis, unrounded).
func creditTruth(p portfolio) float64 {
	var total float64
	for _, l := range p.Loans {
		total += loanECL(l, "stage")
	}
	return total
}

func validateCreditLoad(out json.RawMessage) []string {
	var p problems
	// Pointers tell a missing field from a zero one.
	var o struct {
		PortfolioID string `json:"portfolio_id"`
		LoanCount   int    `json:"loan_count"`
		Loans       []struct {
			ID         *string  `json:"id"`
			Stage      *int     `json:"stage"`
			PD12m      *float64 `json:"pd_12m"`
			PDLifetime *float64 `json:"pd_lifetime"`
			LGD        *float64 `json:"lgd"`
			EAD        *float64 `json:"ead"`
		} `json:"loans"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.PortfolioID == "" {
		p.addf("portfolio_id is missing")
	}
	if len(o.Loans) == 0 {
		p.addf("no loans loaded")
	}
	if len(o.Loans) != o.LoanCount {
		p.addf("loaded %d of %d loans: load the whole portfolio (no limit)", len(o.Loans), o.LoanCount)
	}
	for _, l := range o.Loans {
		present := []bool{l.ID != nil, l.Stage != nil, l.PD12m != nil, l.PDLifetime != nil, l.LGD != nil, l.EAD != nil}
		for i, f := range loanFields { // loanFields is in the same order
			if !present[i] {
				p.addf("loans lack field %q: load all fields", f)
				return p
			}
		}
	}
	return p
}

func validateCreditValidation(out json.RawMessage) []string {
	var p problems
	var o struct {
		Valid        *bool    `json:"valid"`
		LoansChecked int      `json:"loans_checked"`
		Checks       []string `json:"checks"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.LoansChecked == 0 {
		p.addf("no loans checked")
	}
	p.validationRan(o.Valid, o.Checks, []string{"ranges", "stages"},
		"the portfolio did not pass validation; blocking issues must be resolved (warnings are not blocking unless strict)")
	return p
}

func validateCreditCalc(out json.RawMessage) []string {
	var p problems
	var o struct {
		PDBasis   string             `json:"pd_basis"`
		TotalECL  *float64           `json:"total_ecl"`
		ByStage   map[string]float64 `json:"by_stage"`
		Rounding  int                `json:"rounding"`
		LoanCount int                `json:"loan_count"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.PDBasis != "stage" {
		p.addf("pd_basis %q violates IFRS 9: use 12-month PD for stage 1 and lifetime PD for stages 2 and 3 (pd_basis \"stage\")", o.PDBasis)
	}
	if o.TotalECL == nil || *o.TotalECL < 0 {
		p.addf("total_ecl missing or negative")
		return p
	}
	var sum float64
	for _, v := range o.ByStage {
		sum += v
	}
	// The parts are rounded separately: allow the rounding error of three terms.
	if math.Abs(sum-*o.TotalECL) > 3*math.Pow(10, -float64(o.Rounding)) {
		p.addf("by_stage sums to %v, not total_ecl %v", sum, *o.TotalECL)
	}
	return p
}

func validateCreditReport(out json.RawMessage) []string {
	var p problems
	var o struct {
		PortfolioID string   `json:"portfolio_id"`
		TotalECL    *float64 `json:"total_ecl"`
		ReportPath  string   `json:"report_path"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.PortfolioID == "" {
		p.addf("portfolio_id is missing")
	}
	if o.TotalECL == nil || *o.TotalECL < 0 {
		p.addf("total_ecl missing or negative")
	}
	if o.ReportPath == "" {
		p.addf("report_path is missing")
	}
	return p
}

const (
	renalLoadSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "dataset path of the patient, e.g. data/renal_dosing/patient-a"},
    "creatinine_unit": {"enum": ["mg/dL", "umol/L"], "description": "unit for serum creatinine (default mg/dL)"},
    "include_drug": {"type": "boolean", "description": "include the prescribed drug's regimen table (default true)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	renalValidateSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "checks": {"type": "array", "items": {"enum": ["completeness", "ranges", "units"]}, "uniqueItems": true, "description": "checks to run (default: all)"},
    "strict": {"type": "boolean", "description": "treat warnings as errors (default false)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	renalCalcSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "weight_basis": {"enum": ["actual", "ideal", "adjusted"], "description": "body weight used in Cockcroft-Gault (default actual)"},
    "precision": {"type": "integer", "minimum": 0, "maximum": 3, "description": "decimal places of the clearance (default 1)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	renalReportSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "crcl_ml_min": {"type": "number", "exclusiveMinimum": 0},
    "dose_mg": {"type": "number", "exclusiveMinimum": 0},
    "interval_h": {"type": "number", "exclusiveMinimum": 0},
    "include_rationale": {"type": "boolean", "description": "include the rationale (default true)"},
    "precision": {"type": "integer", "minimum": 0, "maximum": 2, "description": "decimal places of the clearance in the report (default 0)"},
    "output_path": {"type": "string"}
  },
  "required": ["path", "crcl_ml_min", "dose_mg", "interval_h"],
  "additionalProperties": false
}`
)

func refRenalDosing() *Task {
	st, stems := loadStore(renalTask)
	return build(st, stems, taskDef{
		name:  renalTask,
		title: "Renal dose adjustment (Cockcroft–Gault)",
		instructions: "You are a clinical decision support assistant. For the patient named by the user, load the " +
			"record, validate it, calculate the creatinine clearance with the Cockcroft-Gault equation and the " +
			"renally adjusted dose of the prescribed drug, then generate the dosing report with the calculated " +
			"figures. Only touch the datasets you are given.",
		prompt: "Calculate the creatinine clearance and the renally adjusted dose for the patient at %s and generate the dosing report.",
		states: []State{
			{Name: "LOAD_DATA", Tool: "load_patient", Next: []string{"VALIDATE_DATA"}, Validate: validateRenalLoad},
			{Name: "VALIDATE_DATA", Tool: "validate_patient", Next: []string{"CALCULATE"}, Validate: validateRenalValidation},
			{Name: "CALCULATE", Tool: "calculate_dose", Next: []string{"GENERATE_REPORT"}, Validate: validateRenalCalc},
			{Name: "GENERATE_REPORT", Tool: "generate_dosing_report", Validate: validateRenalReport},
		},
		tools: []Tool{
			pathTool("load_patient", "Load a patient record with the prescribed drug.", renalLoadSchema, st.renalLoad),
			pathTool("validate_patient", "Check a patient record for completeness and plausible values.", renalValidateSchema, st.renalValidate),
			pathTool("calculate_dose", "Calculate Cockcroft-Gault creatinine clearance and the renally adjusted dose.", renalCalcSchema, st.renalCalc),
			pathTool("generate_dosing_report", "Generate the dosing report from the calculated clearance and dose.", renalReportSchema, st.renalReport),
		},
		check: func(inst *Instance, output json.RawMessage) bool {
			var rec patientRecord
			var rep struct {
				PatientID string  `json:"patient_id"`
				DoseMg    float64 `json:"dose_mg"`
				IntervalH float64 `json:"interval_h"`
			}
			if json.Unmarshal(refData(inst), &rec) != nil || json.Unmarshal(output, &rep) != nil {
				return false
			}
			crcl, _ := cockcroftGault(rec, "actual")
			want := rec.Drug.bandFor(crcl)
			return rep.PatientID == rec.Patient.PatientID && rep.DoseMg == want.DoseMg && rep.IntervalH == want.IntervalH
		},
		ideal: func(state, path string, results []ToolResult) map[string]any {
			args := map[string]any{"path": path}
			if state == "GENERATE_REPORT" {
				var calc struct {
					CrCl      float64 `json:"crcl_ml_min"`
					DoseMg    float64 `json:"dose_mg"`
					IntervalH float64 `json:"interval_h"`
				}
				decodeLast(results, "calculate_dose", &calc)
				args["crcl_ml_min"], args["dose_mg"], args["interval_h"] = calc.CrCl, calc.DoseMg, calc.IntervalH
			}
			return args
		},
	})
}

func validateRenalLoad(out json.RawMessage) []string {
	var p problems
	var o struct {
		PatientID string   `json:"patient_id"`
		Sex       string   `json:"sex"`
		Age       float64  `json:"age_years"`
		Weight    float64  `json:"weight_kg"`
		Scr       float64  `json:"serum_creatinine"`
		Drug      *regimen `json:"drug"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.PatientID == "" || o.Age <= 0 || o.Weight <= 0 || o.Scr <= 0 || o.Sex == "" {
		p.addf("patient_id, sex, age, weight and serum creatinine are required")
	}
	if o.Drug == nil || len(o.Drug.Bands) == 0 {
		p.addf("the prescribed drug's regimen table was not loaded (include_drug must be true)")
	}
	return p
}

func validateRenalValidation(out json.RawMessage) []string {
	var p problems
	var o struct {
		Valid  *bool    `json:"valid"`
		Checks []string `json:"checks"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	p.validationRan(o.Valid, o.Checks, []string{"completeness", "ranges"},
		"the record did not pass validation (warnings are not blocking unless strict)")
	return p
}

func validateRenalCalc(out json.RawMessage) []string {
	var p problems
	var o struct {
		Formula   string  `json:"formula"`
		CrCl      float64 `json:"crcl_ml_min"`
		DoseMg    float64 `json:"dose_mg"`
		IntervalH float64 `json:"interval_h"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.Formula != "cockcroft-gault" {
		p.addf("formula must be cockcroft-gault")
	}
	if o.CrCl < 1 || o.CrCl > 250 || math.IsNaN(o.CrCl) {
		p.addf("creatinine clearance %v mL/min is not plausible", o.CrCl)
	}
	if o.DoseMg <= 0 || o.IntervalH <= 0 {
		p.addf("dose and interval must be positive")
	}
	return p
}

func validateRenalReport(out json.RawMessage) []string {
	var p problems
	var o struct {
		PatientID      string  `json:"patient_id"`
		DoseMg         float64 `json:"dose_mg"`
		IntervalH      float64 `json:"interval_h"`
		Recommendation string  `json:"recommendation"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.PatientID == "" || o.Recommendation == "" {
		p.addf("patient_id and recommendation are required")
	}
	if o.DoseMg <= 0 || o.IntervalH <= 0 {
		p.addf("dose and interval must be positive")
	}
	return p
}

const (
	amlLoadSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "dataset path of the customer, e.g. data/aml_screening/cust-a"},
    "include_transactions": {"type": "boolean", "description": "include recent transactions (default false)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	amlScreenSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "lists": {"type": "array", "items": {"enum": ["ofac_sdn", "un_consolidated", "eu_fsf"]}, "uniqueItems": true, "minItems": 1, "description": "watchlists to screen against (default: all)"},
    "threshold": {"type": "number", "minimum": 0.5, "maximum": 1, "description": "minimum name similarity for a match (default 0.85)"},
    "match_dob": {"type": "boolean", "description": "count a match only when the date of birth also agrees (default false)"}
  },
  "required": ["path"],
  "additionalProperties": false
}`
	amlReviewSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "match_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true, "description": "watchlist entry ids of the screening matches"},
    "depth": {"enum": ["standard", "full"], "description": "review depth (default standard)"},
    "include_adverse_media": {"type": "boolean", "description": "include the adverse-media search (default false)"}
  },
  "required": ["path", "match_ids"],
  "additionalProperties": false
}`
	amlReportSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "screening_outcome": {"enum": ["clean", "hit"]},
    "disposition": {"enum": ["true_match", "false_positive"], "description": "enhanced review disposition, required after a hit"},
    "risk_rating": {"enum": ["low", "medium", "high"], "description": "overrides the default rating of the outcome"},
    "include_matches": {"type": "boolean"},
    "match_ids": {"type": "array", "items": {"type": "string"}},
    "output_path": {"type": "string"}
  },
  "required": ["path", "screening_outcome"],
  "additionalProperties": false
}`
)

func refAMLScreening() *Task {
	st, stems := loadStore(amlTask)
	var wl struct {
		Entries []watchEntry `json:"entries"`
	}
	raw, err := fixtureFS.ReadFile("fixtures/aml_watchlist.json")
	if err == nil {
		err = json.Unmarshal(raw, &wl)
	}
	if err != nil {
		panic("tasks: aml watchlist: " + err.Error()) // embedded: a build-time fact
	}
	s := &amlStore{store: st, watchlist: wl.Entries}
	return build(st, stems, taskDef{
		name:  amlTask,
		title: "Sanctions / AML screening of a customer",
		instructions: "You are an AML compliance analyst. Screen the customer named by the user against the " +
			"sanctions watchlists. Load the customer, screen the name against all lists; if the screening " +
			"reports a hit, run an enhanced review of the matches; then generate the screening report with the " +
			"outcome (and the review disposition after a hit). Only touch the datasets you are given.",
		prompt:     "Screen the customer at %s against the sanctions watchlists and file the screening report.",
		extraScope: []string{"watchlists"},
		states: []State{
			{Name: "LOAD_DATA", Tool: "load_customer", Next: []string{"SCREEN"}, Validate: validateAMLLoad},
			{Name: "SCREEN", Tool: "screen_watchlists", Next: []string{"ENHANCED_REVIEW", "GENERATE_REPORT"},
				Route: routeScreen, Validate: validateAMLScreen},
			{Name: "ENHANCED_REVIEW", Tool: "enhanced_review", Next: []string{"GENERATE_REPORT"}, Validate: validateAMLReview},
			{Name: "GENERATE_REPORT", Tool: "generate_aml_report", Validate: validateAMLReport},
		},
		tools: []Tool{
			pathTool("load_customer", "Load a customer record.", amlLoadSchema, s.load),
			{Name: "screen_watchlists", Description: "Screen a customer's name against sanctions watchlists.", Schema: json.RawMessage(amlScreenSchema),
				Resources: screenResources, Exec: s.screen},
			pathTool("enhanced_review", "Review screening matches in depth (date of birth, country) and give a disposition.", amlReviewSchema, s.review),
			pathTool("generate_aml_report", "Generate and file the screening report.", amlReportSchema, s.report),
		},
		check: func(inst *Instance, output json.RawMessage) bool {
			var rec customerRecord
			var rep struct {
				CustomerID string `json:"customer_id"`
				Outcome    string `json:"outcome"`
			}
			if json.Unmarshal(refData(inst), &rec) != nil || json.Unmarshal(output, &rep) != nil {
				return false
			}
			return rep.CustomerID == rec.Customer.CustomerID && rep.Outcome == s.truth(rec)
		},
		ideal: func(state, path string, results []ToolResult) map[string]any {
			args := map[string]any{"path": path}
			var scr struct {
				Hit     bool       `json:"hit"`
				Matches []amlMatch `json:"matches"`
			}
			decodeLast(results, "screen_watchlists", &scr)
			ids := []string{}
			for _, m := range scr.Matches {
				ids = append(ids, m.EntryID)
			}
			switch state {
			case "ENHANCED_REVIEW":
				args["match_ids"] = ids
			case "GENERATE_REPORT":
				args["screening_outcome"] = "clean"
				if scr.Hit {
					args["screening_outcome"] = "hit"
					var rev struct {
						Disposition string `json:"disposition"`
					}
					decodeLast(results, "enhanced_review", &rev)
					args["disposition"] = rev.Disposition
				}
			}
			return args
		},
	})
}

func routeScreen(out json.RawMessage) (string, error) {
	var o struct {
		Hit *bool `json:"hit"`
	}
	if err := json.Unmarshal(out, &o); err != nil || o.Hit == nil {
		return "", fmt.Errorf("tasks: screening output has no boolean \"hit\"")
	}
	if *o.Hit {
		return "ENHANCED_REVIEW", nil
	}
	return "GENERATE_REPORT", nil
}

// screenResources: the customer's dataset plus one resource per watchlist consulted.
func screenResources(args json.RawMessage) []string {
	var a struct {
		Path  string   `json:"path"`
		Lists []string `json:"lists"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return []string{""}
	}
	if len(a.Lists) == 0 {
		a.Lists = amlLists
	}
	out := []string{a.Path}
	for _, l := range a.Lists {
		out = append(out, "watchlists/"+l)
	}
	return out
}

func validateAMLLoad(out json.RawMessage) []string {
	var p problems
	var o struct {
		CustomerID string `json:"customer_id"`
		Name       string `json:"name"`
		DOB        string `json:"dob"`
	}
	if decodeOutput(out, &o, &p) && (o.CustomerID == "" || o.Name == "" || o.DOB == "") {
		p.addf("customer_id, name and dob are required")
	}
	return p
}

func validateAMLScreen(out json.RawMessage) []string {
	var p problems
	var o struct {
		Hit           *bool    `json:"hit"`
		ListsScreened []string `json:"lists_screened"`
		Threshold     float64  `json:"threshold"`
		MatchDOB      bool     `json:"match_dob"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.Hit == nil {
		p.addf("hit is missing")
	}
	for _, l := range amlLists {
		if !slices.Contains(o.ListsScreened, l) {
			p.addf("list %s was not screened: policy requires all lists", l)
		}
	}
	if o.Threshold > 0.9 {
		p.addf("threshold %v is above the policy maximum 0.90", o.Threshold)
	}
	if o.MatchDOB {
		p.addf("match_dob suppresses name-only matches: policy requires name screening without it")
	}
	return p
}

func validateAMLReview(out json.RawMessage) []string {
	var p problems
	var o struct {
		Reviewed    []json.RawMessage `json:"reviewed"`
		Disposition string            `json:"disposition"`
	}
	if decodeOutput(out, &o, &p) && (len(o.Reviewed) == 0 || o.Disposition == "") {
		p.addf("reviewed matches and a disposition are required")
	}
	return p
}

func validateAMLReport(out json.RawMessage) []string {
	var p problems
	var o struct {
		CustomerID string `json:"customer_id"`
		Outcome    string `json:"outcome"`
		ReportPath string `json:"report_path"`
	}
	if !decodeOutput(out, &o, &p) {
		return p
	}
	if o.CustomerID == "" || o.ReportPath == "" {
		p.addf("customer_id and report_path are required")
	}
	if !slices.Contains([]string{"clear", "cleared_false_positive", "escalated_to_mlro"}, o.Outcome) {
		p.addf("outcome %q is not one of clear, cleared_false_positive, escalated_to_mlro", o.Outcome)
	}
	return p
}

// taskDef is what a built-in task defines itself; build adds what the built-in tasks share.
type taskDef struct {
	name, title, instructions string
	// prompt is the user message of an instance; its one %s stands for the dataset path.
	prompt string
	// extraScope lists what every instance may touch besides its dataset and report paths.
	extraScope []string
	// states run from states[0], the start; the last state is terminal and its tool is the
	// final tool.
	states []State
	tools  []Tool
	check  func(inst *Instance, output json.RawMessage) bool
	// ideal gives the Ideal agent's arguments for a state (see idealFunc).
	ideal func(state, path string, results []ToolResult) map[string]any
}

// build makes the Task of d over its fixture store st, with one instance per stem in order.
func build(st store, stems []string, d taskDef) *Task {
	t := &Task{
		Name:         d.name,
		Title:        d.title,
		Instructions: d.instructions,
		Start:        d.states[0].Name,
		States:       d.states,
		Tools:        d.tools,
		FinalTool:    d.states[len(d.states)-1].Tool,
		Check:        d.check,
	}
	for _, id := range stems {
		p := datasetPath(d.name, id)
		t.Instances = append(t.Instances, Instance{
			ID:     id,
			Prompt: fmt.Sprintf(d.prompt, p),
			Scope:  append([]string{p, reportPath(d.name, id)}, d.extraScope...),
			Input:  st[p], // the reference tasks keep their fixture data here
		})
	}
	t.Ideal = idealFunc(t, d.ideal)
	return t
}

// pathTool is a tool whose resources are its "path" and "output_path" arguments (pathResources).
func pathTool(name, description, schema string, exec func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error)) Tool {
	return Tool{Name: name, Description: description, Schema: json.RawMessage(schema), Resources: pathResources, Exec: exec}
}

// validationRan records the problems of a validation tool's output: each required check that
// was not run, then notValid when the data did not pass.
func (p *problems) validationRan(valid *bool, checks, required []string, notValid string) {
	for _, c := range required {
		if !slices.Contains(checks, c) {
			p.addf("required check %q was not run", c)
		}
	}
	if valid == nil || !*valid {
		p.addf("%s", notValid)
	}
}

// pathResources is the Resources function of a tool whose only resources are its "path" and
// optional "output_path" arguments. Malformed arguments yield the empty path, which is never in
// scope, so the permission gate rejects them rather than letting them through.
func pathResources(args json.RawMessage) []string {
	var a struct {
		Path       string `json:"path"`
		OutputPath string `json:"output_path"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return []string{""}
	}
	out := []string{a.Path}
	if a.OutputPath != "" {
		out = append(out, a.OutputPath)
	}
	return out
}

// problems collects validator findings.
type problems []string

func (p *problems) addf(format string, a ...any) { *p = append(*p, fmt.Sprintf(format, a...)) }

// decodeOutput decodes a tool output for a validator, recording a problem on failure.
func decodeOutput(out json.RawMessage, v any, p *problems) bool {
	if err := json.Unmarshal(out, v); err != nil {
		p.addf("output is not the expected JSON object: %v", err)
		return false
	}
	return true
}

// refData is an instance's fixture data in a reference task.
func refData(inst *Instance) json.RawMessage { return inst.Input }
