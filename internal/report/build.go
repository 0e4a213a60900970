package report

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// Options configure Build and BuildDrift. The zero value gives the analysis defaults.
type Options struct {
	// Analysis configures the metrics and tests (permutations, seed, pairs).
	Analysis analysis.Options
	// Title overrides the report's title.
	Title string
	// Notes are added to the report's notes (e.g. that latencies are scaled).
	Notes []string
}

// Build computes the report of a study through q. Run q inside one transaction
// (analysis.Snapshot) for a report of one snapshot; through the HTTP API
// (queryapi.Client.Querier) ingestion may move between statements, which analysis handles by
// retrying. Errors wrap analysis.ErrNoStudy, analysis.ErrNoRuns or the querier's.
func Build(ctx context.Context, q analysis.Querier, study string, opts Options) (*Report, error) {
	mr, err := analysis.ComputeFrom(ctx, q, study, opts.Analysis)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Format:  FormatV1,
		Kind:    KindStudy,
		Name:    study,
		Title:   opts.Title,
		Study:   study,
		Metrics: NewMetricsDocument(mr),
		Notes:   []string{},
		dists:   map[analysis.CellKey]dist{},
	}
	if r.Title == "" {
		r.Title = "Variance report: " + mr.Study.Name
	}
	if r.Cells, err = loadCellInfo(ctx, q, study); err != nil {
		return nil, err
	}
	if r.Basis, err = loadBasis(ctx, q, study); err != nil {
		return nil, err
	}
	if r.Coding, err = analysis.ComputeCoding(ctx, q, study); err != nil {
		return nil, err
	}
	for _, c := range mr.Cells {
		d := c.Data
		r.Basis.Runs += d.Runs
		r.Basis.CountedRuns += d.CountedRuns
		r.Basis.IncompleteRuns += d.IncompleteRuns
		r.Basis.SupersededAttempts += d.SupersededAttempts
		r.Basis.FoldErrors += d.FoldErrors
		r.Basis.ErroredRuns += d.ErroredRuns
		r.Basis.AbortedRuns += d.AbortedRuns
		r.Basis.Causes = addCauses(r.Basis.Causes, d.Causes)
		if d.ExpectedRuns != nil {
			n := *d.ExpectedRuns
			if r.Basis.ExpectedRuns != nil {
				n += *r.Basis.ExpectedRuns
			}
			r.Basis.ExpectedRuns = &n
		}
	}
	r.Basis.Models = modelsOf(r.Cells)
	if err := loadDists(ctx, q, study, r.dists); err != nil {
		return nil, err
	}
	if r.Context, err = analysis.ComputeContext(ctx, q, study, mr.Cells); err != nil {
		return nil, err
	}
	r.Findings = studyFindings(mr, r.Cells)
	r.Notes = append(r.Notes, basisNotes(r)...)
	r.Notes = append(r.Notes, mr.Notes...)
	r.Notes = append(r.Notes, boundNotes(mr.Cells)...)
	r.Notes = append(r.Notes, opts.Notes...)
	return r, nil
}

// BuildDrift compares every production (task, model) of a study — releases pooled — over the
// window [now − window, now) with the window before it, [now − 2·window, now − window):
// variance drift. The comparisons of all cells are adjusted together (Benjamini–Hochberg).
// Errors wrap ErrNoData when neither window holds a run, ErrInvalid for a window ≤ 0.
func BuildDrift(ctx context.Context, q analysis.Querier, study string, now time.Time, window time.Duration, opts Options) (*Report, error) {
	if window <= 0 {
		return nil, fmt.Errorf("%w: drift window %v", ErrInvalid, window)
	}
	wa := analysis.Window{From: now.Add(-2 * window), To: now.Add(-window)}
	wb := analysis.Window{From: now.Add(-window), To: now}
	type tm struct{ task, model string }
	var pairs []tm
	incomplete := map[analysis.CellKey]int64{} // per (task, model), both windows
	err := q.Query(ctx, queries.ReportWindowCells, []any{study, wa.From.UnixMicro(), wb.To.UnixMicro()}, func(row []any) error {
		pairs = append(pairs, tm{str(row[0]), str(row[1])})
		incomplete[analysis.CellKey{Task: str(row[0]), Model: str(row[1])}], _ = toInt(row[3])
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: study %q has no run started in %s or %s", ErrNoData, study, wa, wb)
	}
	r := &Report{
		Format: FormatV1,
		Kind:   KindDrift,
		Name:   DriftName(study),
		Title:  opts.Title,
		Study:  study,
		Drift:  []analysis.WindowComparison{},
		Notes:  []string{},
		dists:  map[analysis.CellKey]dist{},
	}
	if r.Title == "" {
		r.Title = fmt.Sprintf("Variance drift: %s, the last %s against the %s before", study, period(window), period(window))
	}
	for _, p := range pairs {
		wc, err := analysis.CompareWindowsFrom(ctx, q, analysis.CellFilter{Study: study, Task: p.task, Model: p.model}, wa, wb, opts.Analysis)
		if err != nil {
			return nil, err
		}
		r.Drift = append(r.Drift, *wc)
	}
	// One family per report: adjust every window comparison together.
	var all []metrics.Comparison
	for _, d := range r.Drift {
		all = append(all, d.Comparisons...)
	}
	metrics.AdjustBH(all)
	i := 0
	for di := range r.Drift {
		for ci := range r.Drift[di].Comparisons {
			r.Drift[di].Comparisons[ci] = all[i]
			i++
		}
	}
	if r.Cells, err = loadCellInfo(ctx, q, study); err != nil {
		return nil, err
	}
	if r.Basis, err = loadBasis(ctx, q, study); err != nil {
		return nil, err
	}
	r.Basis.WindowA, r.Basis.WindowB = wa.String(), wb.String()
	for _, n := range incomplete {
		r.Basis.IncompleteRuns += n
		r.Basis.FoldErrors += n
	}
	for _, d := range r.Drift {
		r.Basis.CountedRuns += int64(d.A.Metrics.N + d.B.Metrics.N)
	}
	r.Basis.Models = modelsOf(r.Cells)
	r.Findings = driftFindings(r.Drift, window, r.Cells, incomplete)
	r.Notes = append(r.Notes, basisNotes(r)...)
	r.Notes = append(r.Notes, boundNotes(r.windowCells())...)
	r.Notes = append(r.Notes, opts.Notes...)
	return r, nil
}

// windowCells are a drift report's windows as cells, the condition naming the window.
func (r *Report) windowCells() []analysis.Cell {
	var out []analysis.Cell
	for _, d := range r.Drift {
		out = append(out,
			analysis.Cell{CellKey: analysis.CellKey{Task: d.Cell.Task, Model: d.Cell.Model, Condition: "previous window"}, Metrics: d.A.Metrics},
			analysis.Cell{CellKey: analysis.CellKey{Task: d.Cell.Task, Model: d.Cell.Model, Condition: "last window"}, Metrics: d.B.Metrics})
	}
	return out
}

// StudyInfo is a study as the scheduler sees it.
type StudyInfo struct {
	Study      string
	SourceKind string
	// LastEvent is the time of its latest event, report announcements excluded.
	LastEvent time.Time
	// LastSeq is the highest stream sequence of its stored events, report announcements
	// excluded: it moves whenever an event of the study is stored, whatever the event's time.
	LastSeq uint64
}

// Studies lists every study with run events, with its kind, latest event and highest stream
// sequence.
func Studies(ctx context.Context, q analysis.Querier) ([]StudyInfo, error) {
	var out []StudyInfo
	err := q.Query(ctx, queries.ReportStudies, nil, func(row []any) error {
		us, _ := toInt(row[2])
		seq, _ := toInt(row[3])
		out = append(out, StudyInfo{Study: str(row[0]), SourceKind: str(row[1]), LastEvent: time.UnixMicro(us).UTC(), LastSeq: uint64(seq)})
		return nil
	})
	return out, err
}

func loadCellInfo(ctx context.Context, q analysis.Querier, study string) ([]CellInfo, error) {
	var out []CellInfo
	err := q.Query(ctx, queries.ReportCells, []any{study}, func(row []any) error {
		c := CellInfo{CellKey: analysis.CellKey{Task: str(row[0]), Model: str(row[1]), Condition: str(row[2])}, Components: []string{}}
		if s := str(row[3]); s != "" {
			c.Components = strings.Split(s, ",")
		}
		c.Simulated = toBool(row[4])
		c.Sources, _ = toInt(row[5])
		out = append(out, c)
		return nil
	})
	return out, err
}

func loadBasis(ctx context.Context, q analysis.Querier, study string) (Basis, error) {
	b := Basis{Causes: []analysis.Cause{}}
	err := q.Query(ctx, queries.ReportBasis, []any{study}, func(row []any) error {
		b.Events, _ = toInt(row[0])
		b.ReportEvents, _ = toInt(row[1])
		b.FirstEvent = timeText(row[2])
		b.LastEvent = timeText(row[3])
		b.RejectedEvents, _ = toInt(row[4])
		return nil
	})
	return b, err
}

// loadDists reads every counted run's tokens and latency (analysis_runs: the runs the metrics
// count).
func loadDists(ctx context.Context, q analysis.Querier, study string, out map[analysis.CellKey]dist) error {
	return q.Query(ctx, queries.AnalysisRuns, []any{study, nil, nil, nil, nil, nil}, func(row []any) error {
		k := analysis.CellKey{Task: str(row[0]), Model: str(row[1]), Condition: str(row[2])}
		d := out[k]
		tok, _ := toFloat(row[7])
		lat, _ := toFloat(row[8])
		d.tokens = append(d.tokens, tok)
		d.latency = append(d.latency, lat)
		out[k] = d
		return nil
	})
}

func modelsOf(cells []CellInfo) []ModelInfo {
	sim := map[string]bool{}
	for _, c := range cells {
		sim[c.Model] = sim[c.Model] || c.Simulated
	}
	out := make([]ModelInfo, 0, len(sim))
	for m, s := range sim {
		out = append(out, ModelInfo{Name: m, Simulated: s})
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func basisNotes(r *Report) []string {
	var sim, real []string
	for _, m := range r.Basis.Models {
		if m.Simulated {
			sim = append(sim, m.Name)
		} else {
			real = append(real, m.Name)
		}
	}
	var out []string
	if len(sim) > 0 {
		out = append(out, "simulated models (ditto's seeded personas, not real LLMs): "+strings.Join(sim, ", "))
	}
	if len(real) > 0 {
		out = append(out, "models not simulated: "+strings.Join(real, ", "))
	}
	if r.Basis.RejectedEvents > 0 {
		out = append(out, fmt.Sprintf("%d messages on the study's subjects were rejected at ingestion (see the rejected_events table)", r.Basis.RejectedEvents))
	}
	return out
}

// Value conversions for rows from database/sql (int64, float64, bool, string) and from the
// HTTP API's JSON (json.Number, string, bool).

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case uint64:
		return int64(x), true
	case float64:
		return int64(x), true
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		f, err := x.Float64()
		return int64(f), err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	n, ok := toInt(v)
	return float64(n), ok
}

func toBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true"
	}
	return false
}

func timeText(v any) *string {
	us, ok := toInt(v)
	if !ok || v == nil {
		return nil
	}
	s := time.UnixMicro(us).UTC().Format(time.RFC3339Nano)
	return &s
}

// addCauses adds a cell's causes to a study's: the same kind, permanence and detail sum their
// runs; the most frequent first.
func addCauses(to, from []analysis.Cause) []analysis.Cause {
	for _, c := range from {
		i := slices.IndexFunc(to, func(t analysis.Cause) bool {
			return t.Kind == c.Kind && t.Permanent == c.Permanent && t.Detail == c.Detail
		})
		if i < 0 {
			to = append(to, c)
		} else {
			to[i].Runs += c.Runs
		}
	}
	slices.SortStableFunc(to, func(a, b analysis.Cause) int { return int(b.Runs - a.Runs) })
	return to
}
