package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// renal_dosing: creatinine clearance by Cockcroft–Gault and the renally adjusted dose.
//
// CrCl (mL/min) = (140 − age) × weight (kg) / (72 × serum creatinine (mg/dL)), × 0.85 for
// women. The ground truth uses actual body weight; the calculation tool also offers ideal body
// weight (Devine) and adjusted body weight (IBW + 0.4 × (actual − IBW)), legitimate clinical
// variants that change the CrCl and, near a band boundary, the dose. The dose is the band of the
// drug's regimen table whose lower CrCl bound the clearance reaches. The fixtures are
// illustrative, not clinical guidance.

const renalTask = "renal_dosing"

const mgdlToUmol = 88.4

func renalKit() kit {
	st, _ := loadStore(renalTask)
	return kit{
		tools: map[string]execFunc{
			"load_patient": st.renalLoad, "validate_patient": st.renalValidate,
			"calculate_dose": st.renalCalc, "generate_dosing_report": st.renalReport,
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
	}
}

type band struct {
	MinCrCl   float64 `json:"min_crcl"`
	DoseMg    float64 `json:"dose_mg"`
	IntervalH float64 `json:"interval_h"`
}

type regimen struct {
	Name           string  `json:"name"`
	Route          string  `json:"route"`
	UsualDoseMg    float64 `json:"usual_dose_mg"`
	UsualIntervalH float64 `json:"usual_interval_h"`
	Bands          []band  `json:"bands"` // descending min_crcl, last band min_crcl 0
}

type patientRecord struct {
	Patient struct {
		PatientID string  `json:"patient_id"`
		Sex       string  `json:"sex"`
		AgeYears  float64 `json:"age_years"`
		WeightKg  float64 `json:"weight_kg"`
		HeightCm  float64 `json:"height_cm"`
		CreatMgDl float64 `json:"serum_creatinine_mg_dl"`
	} `json:"patient"`
	Drug regimen `json:"drug"`
}

// cockcroftGault returns the clearance in mL/min and the weight used.
func cockcroftGault(rec patientRecord, basis string) (crcl, weight float64) {
	p := rec.Patient
	weight = p.WeightKg
	if basis == "ideal" || basis == "adjusted" {
		base := 50.0
		if p.Sex == "F" {
			base = 45.5
		}
		ibw := base + 2.3*(p.HeightCm/2.54-60)
		weight = ibw
		if basis == "adjusted" {
			weight = ibw + 0.4*(p.WeightKg-ibw)
		}
	}
	crcl = (140 - p.AgeYears) * weight / (72 * p.CreatMgDl)
	if p.Sex == "F" {
		crcl *= 0.85
	}
	return crcl, weight
}

func (r regimen) bandFor(crcl float64) band {
	for _, b := range r.Bands {
		if crcl >= b.MinCrCl {
			return b
		}
	}
	return r.Bands[len(r.Bands)-1]
}

func (s store) patient(p string) (patientRecord, error) {
	return decoded[patientRecord](s, "patient record", p)
}

func (s store) renalLoad(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path           string `json:"path"`
		CreatinineUnit string `json:"creatinine_unit"`
		IncludeDrug    *bool  `json:"include_drug"`
	}{CreatinineUnit: "mg/dL"}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	rec, err := s.patient(a.Path)
	if err != nil {
		return nil, err
	}
	p := rec.Patient
	scr := p.CreatMgDl
	switch a.CreatinineUnit {
	case "mg/dL":
	case "umol/L":
		scr = round(scr*mgdlToUmol, 1)
	default:
		return nil, fmt.Errorf("%w: creatinine_unit must be mg/dL or umol/L", ErrBadArguments)
	}
	out := map[string]any{
		"patient_id": p.PatientID, "sex": p.Sex, "age_years": p.AgeYears, "weight_kg": p.WeightKg,
		"height_cm": p.HeightCm, "serum_creatinine": scr, "creatinine_unit": a.CreatinineUnit,
	}
	if a.IncludeDrug == nil || *a.IncludeDrug {
		out["drug"] = rec.Drug
	}
	return mustJSON(out), nil
}

func (s store) renalValidate(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path   string   `json:"path"`
		Checks []string `json:"checks"`
		Strict bool     `json:"strict"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	rec, err := s.patient(a.Path)
	if err != nil {
		return nil, err
	}
	checks := checksOr(a.Checks, []string{"completeness", "ranges", "units"})
	p := rec.Patient
	issues := []finding{}
	for _, c := range checks {
		switch c {
		case "completeness":
			if p.PatientID == "" || p.AgeYears == 0 || p.WeightKg == 0 || p.CreatMgDl == 0 || (p.Sex != "M" && p.Sex != "F") {
				issues = append(issues, finding{c, "error", "age, sex, weight and serum creatinine are required"})
			}
			if len(rec.Drug.Bands) == 0 {
				issues = append(issues, finding{c, "error", "no regimen table for the prescribed drug"})
			}
		case "ranges":
			if p.AgeYears < 18 || p.AgeYears > 120 || p.WeightKg < 30 || p.WeightKg > 300 {
				issues = append(issues, finding{c, "error", "age or weight outside the adult range of the equation"})
			}
			if p.AgeYears >= 80 {
				issues = append(issues, finding{c, "warning", "age 80 or over: Cockcroft-Gault may overestimate clearance"})
			}
		case "units":
			if p.CreatMgDl < 0.2 || p.CreatMgDl > 20 {
				issues = append(issues, finding{c, "error", "serum creatinine not plausible in mg/dL"})
			}
		default:
			return nil, fmt.Errorf("%w: unknown check %q", ErrBadArguments, c)
		}
	}
	return mustJSON(map[string]any{"patient_id": p.PatientID, "valid": passes(issues, a.Strict), "checks": checks, "strict": a.Strict, "issues": issues}), nil
}

func (s store) renalCalc(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path        string `json:"path"`
		WeightBasis string `json:"weight_basis"`
		Precision   *int   `json:"precision"`
	}{WeightBasis: "actual"}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	places := valueOr(a.Precision, 1)
	if places < 0 || places > 3 || !slices.Contains([]string{"actual", "ideal", "adjusted"}, a.WeightBasis) {
		return nil, fmt.Errorf("%w: precision must be 0..3 and weight_basis one of actual, ideal, adjusted", ErrBadArguments)
	}
	rec, err := s.patient(a.Path)
	if err != nil {
		return nil, err
	}
	if rec.Patient.CreatMgDl <= 0 || len(rec.Drug.Bands) == 0 {
		return nil, fmt.Errorf("tasks: %s lacks creatinine or a regimen table", a.Path)
	}
	crcl, w := cockcroftGault(rec, a.WeightBasis)
	b := rec.Drug.bandFor(crcl)
	return mustJSON(map[string]any{
		"patient_id": rec.Patient.PatientID, "formula": "cockcroft-gault", "weight_basis": a.WeightBasis,
		"weight_used_kg": round(w, 1), "crcl_ml_min": round(crcl, places), "drug": rec.Drug.Name,
		"band_min_crcl": b.MinCrCl, "dose_mg": b.DoseMg, "interval_h": b.IntervalH,
	}), nil
}

func (s store) renalReport(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path             string   `json:"path"`
		CrCl             *float64 `json:"crcl_ml_min"`
		DoseMg           *float64 `json:"dose_mg"`
		IntervalH        *float64 `json:"interval_h"`
		IncludeRationale *bool    `json:"include_rationale"`
		Precision        *int     `json:"precision"`
		OutputPath       string   `json:"output_path"`
	}{}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	if a.CrCl == nil || a.DoseMg == nil || a.IntervalH == nil || *a.CrCl <= 0 {
		return nil, fmt.Errorf("%w: crcl_ml_min, dose_mg and interval_h are required", ErrBadArguments)
	}
	places := valueOr(a.Precision, 0)
	if places < 0 || places > 2 {
		return nil, fmt.Errorf("%w: precision must be 0..2", ErrBadArguments)
	}
	rec, err := s.patient(a.Path)
	if err != nil {
		return nil, err
	}
	// A safety interlock, as a real CDS report would have: the regimen must match the table.
	b := rec.Drug.bandFor(*a.CrCl)
	if b.DoseMg != *a.DoseMg || b.IntervalH != *a.IntervalH {
		return nil, fmt.Errorf("%w: %v mg every %v h does not match the %s table for CrCl %v mL/min (%v mg every %v h)",
			ErrBadArguments, *a.DoseMg, *a.IntervalH, rec.Drug.Name, *a.CrCl, b.DoseMg, b.IntervalH)
	}
	if a.OutputPath == "" {
		a.OutputPath = reportPath(renalTask, rec.Patient.PatientID)
	}
	out := map[string]any{
		"report": "renal_dose_adjustment", "patient_id": rec.Patient.PatientID, "drug": rec.Drug.Name,
		"crcl_ml_min": round(*a.CrCl, places), "dose_mg": *a.DoseMg, "interval_h": *a.IntervalH,
		"recommendation": fmt.Sprintf("%s %g mg %s every %g h", rec.Drug.Name, *a.DoseMg, rec.Drug.Route, *a.IntervalH),
		"report_path":    a.OutputPath,
	}
	if a.IncludeRationale == nil || *a.IncludeRationale {
		out["rationale"] = fmt.Sprintf("Cockcroft-Gault creatinine clearance %g mL/min is at or above %g mL/min, the lower bound of this band.",
			round(*a.CrCl, places), b.MinCrCl)
	}
	return mustJSON(out), nil
}
