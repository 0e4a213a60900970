package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// aml_screening: sanctions screening of a customer against three watchlists, a branching task.
//
//	LOAD_DATA → SCREEN ─ hit ──▶ ENHANCED_REVIEW ─▶ GENERATE_REPORT
//	                   └ clean ──────────────────▶ GENERATE_REPORT
//
// SCREEN's Route reads the screening output's "hit". A name matches a watchlist entry when its
// similarity score (1 − Levenshtein distance / longer length, over the lower-cased letters of
// the name tokens sorted alphabetically) reaches the threshold (default 0.85). Enhanced review
// confirms a match when the dates of birth agree. The ground truth is the outcome with the
// default threshold over all three lists: "clear", "cleared_false_positive" or
// "escalated_to_mlro". The watchlist and the customers are fictitious.

const amlTask = "aml_screening"

var amlLists = []string{"ofac_sdn", "un_consolidated", "eu_fsf"}

const amlDefaultThreshold = 0.85

type watchEntry struct {
	EntryID string `json:"entry_id"`
	List    string `json:"list"`
	Name    string `json:"name"`
	DOB     string `json:"dob"`
	Country string `json:"country"`
}

type customerRecord struct {
	Customer struct {
		CustomerID string `json:"customer_id"`
		Name       string `json:"name"`
		DOB        string `json:"dob"`
		Country    string `json:"country"`
		Segment    string `json:"segment"`
	} `json:"customer"`
	Transactions []json.RawMessage `json:"transactions"`
}

type amlMatch struct {
	EntryID string  `json:"entry_id"`
	List    string  `json:"list"`
	Name    string  `json:"name"`
	Score   float64 `json:"score"`
}

func amlKit() kit {
	st, _ := loadStore(amlTask)
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
	return kit{
		tools: map[string]execFunc{
			"load_customer": s.load, "screen_watchlists": s.screen,
			"enhanced_review": s.review, "generate_aml_report": s.report,
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
	}
}

type amlStore struct {
	store
	watchlist []watchEntry
}

// truth is the ground-truth outcome of an instance: default threshold, all lists.
func (s *amlStore) truth(rec customerRecord) string {
	matches := s.matches(rec, amlLists, amlDefaultThreshold, false)
	if len(matches) == 0 {
		return "clear"
	}
	if s.anyTrueMatch(rec, matches) {
		return "escalated_to_mlro"
	}
	return "cleared_false_positive"
}

// normName lower-cases the letters of each name token and sorts the tokens, so "VOLKOV,
// Dmitri" and "Dmitri Volkov" compare equal.
func normName(name string) string {
	toks := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) })
	slices.Sort(toks)
	return strings.Join(toks, " ")
}

func nameScore(a, b string) float64 {
	x, y := normName(a), normName(b)
	n := max(utf8.RuneCountInString(x), utf8.RuneCountInString(y))
	if n == 0 {
		return 0
	}
	return round(1-float64(levenshtein.ComputeDistance(x, y))/float64(n), 4)
}

// matches screens in watchlist order, so the output order is deterministic.
func (s *amlStore) matches(rec customerRecord, lists []string, threshold float64, matchDOB bool) []amlMatch {
	out := []amlMatch{}
	for _, e := range s.watchlist {
		if !slices.Contains(lists, e.List) {
			continue
		}
		sc := nameScore(rec.Customer.Name, e.Name)
		if sc >= threshold && (!matchDOB || e.DOB == rec.Customer.DOB) {
			out = append(out, amlMatch{EntryID: e.EntryID, List: e.List, Name: e.Name, Score: sc})
		}
	}
	return out
}

func (s *amlStore) anyTrueMatch(rec customerRecord, ms []amlMatch) bool {
	for _, m := range ms {
		if e, ok := s.entry(m.EntryID); ok && e.DOB == rec.Customer.DOB {
			return true
		}
	}
	return false
}

func (s *amlStore) entry(id string) (watchEntry, bool) {
	for _, e := range s.watchlist {
		if e.EntryID == id {
			return e, true
		}
	}
	return watchEntry{}, false
}

func (s *amlStore) customer(p string) (customerRecord, error) {
	return decoded[customerRecord](s.store, "customer record", p)
}

func (s *amlStore) load(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path                string `json:"path"`
		IncludeTransactions bool   `json:"include_transactions"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	rec, err := s.customer(a.Path)
	if err != nil {
		return nil, err
	}
	c := rec.Customer
	out := map[string]any{"customer_id": c.CustomerID, "name": c.Name, "dob": c.DOB, "country": c.Country, "segment": c.Segment}
	if a.IncludeTransactions {
		out["transactions"] = rec.Transactions
	}
	return mustJSON(out), nil
}

func (s *amlStore) screen(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path      string   `json:"path"`
		Lists     []string `json:"lists"`
		Threshold *float64 `json:"threshold"`
		MatchDOB  bool     `json:"match_dob"`
	}{}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	th := valueOr(a.Threshold, amlDefaultThreshold)
	if th < 0.5 || th > 1 {
		return nil, fmt.Errorf("%w: threshold must be in [0.5, 1]", ErrBadArguments)
	}
	lists := amlLists
	if len(a.Lists) > 0 {
		lists = nil
		for _, l := range amlLists { // canonical order, whatever order the caller used
			if slices.Contains(a.Lists, l) {
				lists = append(lists, l)
			}
		}
		for _, l := range a.Lists {
			if !slices.Contains(amlLists, l) {
				return nil, fmt.Errorf("%w: unknown list %q", ErrBadArguments, l)
			}
		}
	}
	rec, err := s.customer(a.Path)
	if err != nil {
		return nil, err
	}
	ms := s.matches(rec, lists, th, a.MatchDOB)
	return mustJSON(map[string]any{
		"customer_id": rec.Customer.CustomerID, "hit": len(ms) > 0, "matches": ms,
		"lists_screened": lists, "threshold": th, "match_dob": a.MatchDOB,
	}), nil
}

func (s *amlStore) review(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	a := struct {
		Path                string   `json:"path"`
		MatchIDs            []string `json:"match_ids"`
		Depth               string   `json:"depth"`
		IncludeAdverseMedia bool     `json:"include_adverse_media"`
	}{Depth: "standard"}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	if len(a.MatchIDs) == 0 {
		return nil, fmt.Errorf("%w: match_ids is required", ErrBadArguments)
	}
	if a.Depth != "standard" && a.Depth != "full" {
		return nil, fmt.Errorf("%w: depth must be standard or full", ErrBadArguments)
	}
	rec, err := s.customer(a.Path)
	if err != nil {
		return nil, err
	}
	type reviewed struct {
		EntryID      string  `json:"entry_id"`
		List         string  `json:"list"`
		Name         string  `json:"name"`
		Score        float64 `json:"score"`
		DOBMatch     bool    `json:"dob_match"`
		CountryMatch bool    `json:"country_match"`
		TrueMatch    bool    `json:"true_match"`
	}
	var rs []reviewed
	confirmed := false
	for _, id := range a.MatchIDs {
		e, ok := s.entry(id)
		if !ok {
			return nil, fmt.Errorf("%w: unknown watchlist entry %q", ErrBadArguments, id)
		}
		r := reviewed{EntryID: e.EntryID, List: e.List, Name: e.Name, Score: nameScore(rec.Customer.Name, e.Name),
			DOBMatch: e.DOB == rec.Customer.DOB, CountryMatch: e.Country == rec.Customer.Country}
		r.TrueMatch = r.DOBMatch
		confirmed = confirmed || r.TrueMatch
		rs = append(rs, r)
	}
	out := map[string]any{"customer_id": rec.Customer.CustomerID, "depth": a.Depth, "reviewed": rs,
		"disposition": "false_positive", "risk_rating": "medium"}
	if confirmed {
		out["disposition"], out["risk_rating"] = "true_match", "high"
	}
	if a.Depth == "full" {
		out["segment"] = rec.Customer.Segment
	}
	if a.IncludeAdverseMedia {
		out["adverse_media"] = []string{} // the fixture sources hold no adverse media
	}
	return mustJSON(out), nil
}

func (s *amlStore) report(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
	var a struct {
		Path             string   `json:"path"`
		ScreeningOutcome string   `json:"screening_outcome"`
		Disposition      string   `json:"disposition"`
		RiskRating       string   `json:"risk_rating"`
		IncludeMatches   bool     `json:"include_matches"`
		MatchIDs         []string `json:"match_ids"`
		OutputPath       string   `json:"output_path"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return nil, err
	}
	var outcome, risk string
	switch {
	case a.ScreeningOutcome == "clean":
		outcome, risk = "clear", "low"
	case a.ScreeningOutcome == "hit" && a.Disposition == "true_match":
		outcome, risk = "escalated_to_mlro", "high"
	case a.ScreeningOutcome == "hit" && a.Disposition == "false_positive":
		outcome, risk = "cleared_false_positive", "medium"
	case a.ScreeningOutcome == "hit":
		return nil, fmt.Errorf("%w: a hit needs the enhanced review disposition (true_match or false_positive)", ErrBadArguments)
	default:
		return nil, fmt.Errorf("%w: screening_outcome must be clean or hit", ErrBadArguments)
	}
	if a.RiskRating != "" {
		if !slices.Contains([]string{"low", "medium", "high"}, a.RiskRating) {
			return nil, fmt.Errorf("%w: risk_rating must be low, medium or high", ErrBadArguments)
		}
		risk = a.RiskRating
	}
	rec, err := s.customer(a.Path)
	if err != nil {
		return nil, err
	}
	if a.OutputPath == "" {
		a.OutputPath = reportPath(amlTask, rec.Customer.CustomerID)
	}
	out := map[string]any{"report": "aml_screening", "customer_id": rec.Customer.CustomerID, "outcome": outcome,
		"risk_rating": risk, "report_path": a.OutputPath}
	if a.IncludeMatches {
		ids := a.MatchIDs
		if ids == nil {
			ids = []string{}
		}
		out["matches"] = ids
	}
	return mustJSON(out), nil
}
