package analysis

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/dittolab/ditto/metrics"
)

// CellFilter selects the runs of a window: Study is required; an empty Task, Model or
// Condition matches any, and the matching runs are pooled into one cell (e.g. every release
// of a production task and model).
type CellFilter struct {
	Study     string `json:"study"`
	Task      string `json:"task"`
	Model     string `json:"model"`
	Condition string `json:"condition"`
}

// String returns "task/model/condition" with "*" for an empty field.
func (f CellFilter) String() string {
	star := func(s string) string {
		if s == "" {
			return AnyCondition
		}
		return s
	}
	return star(f.Task) + "/" + star(f.Model) + "/" + star(f.Condition)
}

// Window is a half-open interval [From, To) of run start times; a zero bound is unbounded.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

func (w Window) bounds() (from, to *int64) {
	if !w.From.IsZero() {
		us := w.From.UnixMicro()
		from = &us
	}
	if !w.To.IsZero() {
		us := w.To.UnixMicro()
		to = &us
	}
	return from, to
}

// String renders the window as "[from, to)" in RFC 3339 ("-∞" and "+∞" for open ends).
func (w Window) String() string {
	from, to := "-∞", "+∞"
	if !w.From.IsZero() {
		from = w.From.UTC().Format(time.RFC3339Nano)
	}
	if !w.To.IsZero() {
		to = w.To.UTC().Format(time.RFC3339Nano)
	}
	return "[" + from + ", " + to + ")"
}

// WindowCell is the cell of one window.
type WindowCell struct {
	Window  Window              `json:"window"`
	Label   string              `json:"label"`
	Metrics metrics.CellMetrics `json:"metrics"`
}

// WindowComparison compares the same cell over two windows of time: variance drift. Its
// comparisons are those of metrics.Compare (B against the reference A), with the
// Benjamini–Hochberg adjustment across them.
type WindowComparison struct {
	Cell        CellFilter           `json:"cell"`
	A           WindowCell           `json:"a"`
	B           WindowCell           `json:"b"`
	Comparisons []metrics.Comparison `json:"comparisons"`
}

// CompareWindows computes a cell (see CellFilter) over two windows of run start times and
// compares them, in one transaction. Runs count as in Compute (latest finished attempt); runs
// are never paired across windows (a run falls in one window only), so success is compared
// with Fisher's exact test. A window without
// runs is no error: its metrics are null and the comparisons say why they have no p. Errors
// wrap ErrNoStudy, ErrNoRuns (neither window has a run) or ErrInvalidOptions.
func CompareWindows(ctx context.Context, db *sql.DB, cell CellFilter, a, b Window, opts Options) (*WindowComparison, error) {
	q, done, err := Snapshot(ctx, db)
	if err != nil {
		return nil, err
	}
	defer done()
	return CompareWindowsFrom(ctx, q, cell, a, b, opts)
}

// CompareWindowsFrom is CompareWindows over any Querier.
func CompareWindowsFrom(ctx context.Context, q Querier, cell CellFilter, a, b Window, opts Options) (*WindowComparison, error) {
	opts, err := checkWindows(cell, []Window{a, b}, opts)
	if err != nil {
		return nil, err
	}
	for range maxAttempts {
		var r *WindowComparison
		r, err = compareWindowsOnce(ctx, q, cell, a, b, opts)
		if !errors.Is(err, ErrChanged) {
			return r, err
		}
	}
	return nil, err
}

func compareWindowsOnce(ctx context.Context, q Querier, cell CellFilter, a, b Window, opts Options) (*WindowComparison, error) {
	st, err := loadStudy(ctx, q, cell.Study)
	if err != nil {
		return nil, err
	}
	load := func(w Window) ([]metrics.Run, error) { return loadWindow(ctx, q, cell, w) }
	ra, err := load(a)
	if err != nil {
		return nil, err
	}
	rb, err := load(b)
	if err != nil {
		return nil, err
	}
	if len(ra) == 0 && len(rb) == 0 {
		return nil, fmt.Errorf("%w: %s in %s: no run in %s or %s", ErrNoRuns, cell, cell.Study, a, b)
	}
	la, lb := cell.String()+" "+a.String(), cell.String()+" "+b.String()
	out := &WindowComparison{Cell: cell, A: WindowCell{Window: a, Label: la}, B: WindowCell{Window: b, Label: lb}}
	if out.A.Metrics, err = cellMetrics(st.SourceKind, ra, opts.Cell); err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", la, err)
	}
	if out.B.Metrics, err = cellMetrics(st.SourceKind, rb, opts.Cell); err != nil {
		return nil, fmt.Errorf("analysis: %s: %w", lb, err)
	}
	if out.Comparisons, err = compareCells(st.SourceKind, ra, rb, opts.compareConfig(la, lb)); err != nil {
		return nil, fmt.Errorf("analysis: compare %s with %s: %w", lb, la, err)
	}
	metrics.AdjustBH(out.Comparisons)
	return out, nil
}

// loadWindow returns the runs of cell started in w, the matching cells pooled in a fixed order
// (cell, then run id).
func loadWindow(ctx context.Context, q Querier, cell CellFilter, w Window) ([]metrics.Run, error) {
	sel := selection{study: cell.Study, task: cell.Task, model: cell.Model, condition: cell.Condition}
	sel.fromUS, sel.toUS = w.bounds()
	byCell, err := loadRuns(ctx, q, sel, false, 0)
	if err != nil {
		return nil, err
	}
	keys := make([]CellKey, 0, len(byCell))
	for k := range byCell {
		keys = append(keys, k)
	}
	sortKeys(keys)
	var runs []metrics.Run
	for _, k := range keys {
		runs = append(runs, byCell[k]...)
	}
	return runs, nil
}

// checkWindows checks a request over windows of one cell: the study is named, no window is
// empty (From before To where both are set), and opts are valid. It returns opts with their
// defaults filled in.
func checkWindows(cell CellFilter, windows []Window, opts Options) (Options, error) {
	if cell.Study == "" {
		return opts, fmt.Errorf("%w: CellFilter.Study is required", ErrInvalidOptions)
	}
	for _, w := range windows {
		if !w.From.IsZero() && !w.To.IsZero() && !w.From.Before(w.To) {
			return opts, fmt.Errorf("%w: window %s is empty", ErrInvalidOptions, w)
		}
	}
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	return opts.withDefaults(), nil
}

// WindowSeriesFrom computes a cell (see CellFilter) in each of consecutive windows of run
// start times, without comparing them: the cell's metrics over time (the console draws them
// as a drift chart). Runs count as in Compute. A window without runs has N = 0 and null
// metrics. Errors wrap ErrNoStudy or ErrInvalidOptions.
func WindowSeriesFrom(ctx context.Context, q Querier, cell CellFilter, windows []Window, opts Options) ([]WindowCell, error) {
	opts, err := checkWindows(cell, windows, opts)
	if err != nil {
		return nil, err
	}
	st, err := loadStudy(ctx, q, cell.Study)
	if err != nil {
		return nil, err
	}
	out := make([]WindowCell, len(windows))
	for i, w := range windows {
		var runs []metrics.Run
		var err error
		// Each window is read on its own: a window whose runs changed while read is read
		// again, as Compute does.
		for range maxAttempts {
			if runs, err = loadWindow(ctx, q, cell, w); !errors.Is(err, ErrChanged) {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = WindowCell{Window: w, Label: cell.String() + " " + w.String()}
		if out[i].Metrics, err = cellMetrics(st.SourceKind, runs, opts.Cell); err != nil {
			return nil, fmt.Errorf("analysis: %s: %w", out[i].Label, err)
		}
	}
	return out, nil
}

func sortKeys(keys []CellKey) {
	for i := 1; i < len(keys); i++ { // insertion sort: few keys
		for j := i; j > 0 && keys[j].less(keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}
