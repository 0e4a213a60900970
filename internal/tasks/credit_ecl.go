package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// credit_ecl: IFRS 9 expected credit loss of a loan portfolio.
//
// Modelling choice (documented because IFRS 9 leaves it to the preparer): ECL per loan is
// PD × LGD × EAD, undiscounted and single-scenario, where PD is the 12-month PD for stage 1 and
// the lifetime PD for stages 2 and 3 (stage 3 loans carry PD = 1). The portfolio ECL is the sum
// over loans. The calculation tool also offers the non-compliant bases "12m" and "lifetime" for
// every loan; the CALCULATE validator rejects them, so a model that picks one is corrected by
// output validation (when that component is on) rather than by the tool.

const creditTask = "credit_ecl"

type loan struct {
	ID         string  `json:"id"`
	Stage      int     `json:"stage"`
	PD12m      float64 `json:"pd_12m"`
	PDLifetime float64 `json:"pd_lifetime"`
	LGD        float64 `json:"lgd"`
	EAD        float64 `json:"ead"`
}

type portfolio struct {
	PortfolioID   string `json:"portfolio_id"`
	ReportingDate string `json:"reporting_date"`
	Currency      string `json:"currency"`
	Loans         []loan `json:"loans"`
}

var loanFields = []string{"id", "stage", "pd_12m", "pd_lifetime", "lgd", "ead"}

func creditKit() kit {
	st, _ := loadStore(creditTask)
	return kit{
		tools: map[string]execFunc{
			"load_portfolio": st.creditLoad, "validate_portfolio": st.creditValidate,
			"calculate_ecl": st.creditCalc, "generate_ecl_report": st.creditReport,
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
	}
}

func loanECL(l loan, basis string) float64 {
	pd := l.PD12m
	if basis == "lifetime" || (basis == "stage" && l.Stage >= 2) {
		pd = l.PDLifetime
	}
	return pd * l.LGD * l.EAD
}

func (s store) portfolio(p string) (portfolio, error) { return decoded[portfolio](s, "portfolio", p) }

func (s store) creditLoad(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path   string   `json:"path"`
		Fields []string `json:"fields"`
		Limit  int      `json:"limit"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	pf, err := s.portfolio(a.Path)
	if err != nil {
		return nil, err
	}
	fields := a.Fields
	if len(fields) == 0 {
		fields = loanFields
	}
	loans := pf.Loans
	if a.Limit > 0 && a.Limit < len(loans) {
		loans = loans[:a.Limit]
	}
	rows := make([]map[string]any, 0, len(loans))
	for _, l := range loans {
		full := map[string]any{"id": l.ID, "stage": l.Stage, "pd_12m": l.PD12m, "pd_lifetime": l.PDLifetime, "lgd": l.LGD, "ead": l.EAD}
		row := map[string]any{}
		for _, f := range fields {
			if v, ok := full[f]; ok {
				row[f] = v
			}
		}
		rows = append(rows, row)
	}
	return mustJSON(map[string]any{
		"portfolio_id": pf.PortfolioID, "reporting_date": pf.ReportingDate, "currency": pf.Currency,
		"loan_count": len(pf.Loans), "loans": rows,
	}), nil
}

// issue is a finding of validate_portfolio about one loan.
type issue struct {
	LoanID   string `json:"loan_id"`
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func (is issue) severity() string { return is.Severity }

func (s store) creditValidate(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path   string   `json:"path"`
		Checks []string `json:"checks"`
		Strict bool     `json:"strict"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	pf, err := s.portfolio(a.Path)
	if err != nil {
		return nil, err
	}
	checks := checksOr(a.Checks, []string{"ranges", "stages", "duplicates", "exposure"})
	issues := []issue{}
	seen := map[string]bool{}
	for _, l := range pf.Loans {
		for _, c := range checks {
			switch c {
			case "ranges":
				if l.PD12m < 0 || l.PD12m > 1 || l.PDLifetime < 0 || l.PDLifetime > 1 || l.LGD < 0 || l.LGD > 1 {
					issues = append(issues, issue{l.ID, c, "error", "PD or LGD outside [0, 1]"})
				} else if l.PDLifetime < l.PD12m {
					issues = append(issues, issue{l.ID, c, "error", "lifetime PD below 12-month PD"})
				}
			case "stages":
				if l.Stage < 1 || l.Stage > 3 {
					issues = append(issues, issue{l.ID, c, "error", "stage not in 1..3"})
				} else if l.Stage == 1 && l.PD12m > 0.2 {
					issues = append(issues, issue{l.ID, c, "warning", "stage 1 loan with 12-month PD above 20%: review for significant increase in credit risk"})
				}
			case "duplicates":
				if seen[l.ID] {
					issues = append(issues, issue{l.ID, c, "error", "duplicate loan id"})
				}
				seen[l.ID] = true
			case "exposure":
				if l.EAD < 0 {
					issues = append(issues, issue{l.ID, c, "error", "negative EAD"})
				}
			default:
				return nil, fmt.Errorf("%w: unknown check %q", ErrBadArguments, c)
			}
		}
	}
	return mustJSON(map[string]any{
		"portfolio_id": pf.PortfolioID, "valid": passes(issues, a.Strict), "loans_checked": len(pf.Loans),
		"checks": checks, "strict": a.Strict, "issues": issues,
	}), nil
}

func (s store) creditCalc(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path         string `json:"path"`
		PDBasis      string `json:"pd_basis"`
		Rounding     *int   `json:"rounding"`
		IncludeLoans bool   `json:"include_loans"`
	}{PDBasis: "stage"}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	places := valueOr(a.Rounding, 2)
	if places < 0 || places > 6 || !slices.Contains([]string{"stage", "12m", "lifetime"}, a.PDBasis) {
		return nil, fmt.Errorf("%w: rounding must be 0..6 and pd_basis one of stage, 12m, lifetime", ErrBadArguments)
	}
	pf, err := s.portfolio(a.Path)
	if err != nil {
		return nil, err
	}
	var total float64
	stages := [4]float64{}
	perLoan := []map[string]any{}
	for _, l := range pf.Loans {
		e := loanECL(l, a.PDBasis)
		total += e
		if l.Stage >= 1 && l.Stage <= 3 {
			stages[l.Stage] += e
		}
		perLoan = append(perLoan, map[string]any{"id": l.ID, "stage": l.Stage, "ecl": round(e, places)})
	}
	out := map[string]any{
		"portfolio_id": pf.PortfolioID, "currency": pf.Currency, "pd_basis": a.PDBasis, "rounding": places,
		"loan_count": len(pf.Loans), "total_ecl": round(total, places),
		"by_stage": map[string]float64{"stage_1": round(stages[1], places), "stage_2": round(stages[2], places), "stage_3": round(stages[3], places)},
	}
	if a.IncludeLoans {
		out["loans"] = perLoan
	}
	return mustJSON(out), nil
}

func (s store) creditReport(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path       string             `json:"path"`
		TotalECL   *float64           `json:"total_ecl"`
		ByStage    map[string]float64 `json:"by_stage"`
		Currency   string             `json:"currency"`
		Precision  *int               `json:"precision"`
		Format     string             `json:"format"`
		OutputPath string             `json:"output_path"`
	}{Format: "summary"}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	if a.TotalECL == nil || *a.TotalECL < 0 {
		return nil, fmt.Errorf("%w: total_ecl is required and must be non-negative", ErrBadArguments)
	}
	places := valueOr(a.Precision, 2)
	if places < 0 || places > 6 {
		return nil, fmt.Errorf("%w: precision must be 0..6", ErrBadArguments)
	}
	pf, err := s.portfolio(a.Path)
	if err != nil {
		return nil, err
	}
	if a.Currency != "" && a.Currency != pf.Currency {
		return nil, fmt.Errorf("%w: currency %s does not match the portfolio currency %s", ErrBadArguments, a.Currency, pf.Currency)
	}
	if a.OutputPath == "" {
		a.OutputPath = reportPath(creditTask, pf.PortfolioID)
	}
	out := map[string]any{
		"report": "ifrs9_ecl", "portfolio_id": pf.PortfolioID, "reporting_date": pf.ReportingDate,
		"currency": pf.Currency, "total_ecl": round(*a.TotalECL, places), "format": a.Format,
		"report_path": a.OutputPath,
	}
	if a.ByStage != nil {
		bs := map[string]float64{}
		for k, v := range a.ByStage {
			bs[k] = round(v, places)
		}
		out["by_stage"] = bs
	}
	if a.Format == "detailed" {
		out["loan_count"] = len(pf.Loans)
	}
	return mustJSON(out), nil
}
