package analysis

import (
	"errors"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/metrics"
)

func TestCompareWindows(t *testing.T) {
	envs, want := harnessStudy("s1")
	w := ingest(t, envs)
	ctx := warehousetest.Context(t, 60*time.Second)
	opts := testOpts.withDefaults()
	// baseline runs start at 1 s + (in*10 + sd) s: inputs 0-2 before 31 s, inputs 3-5 after.
	split := studyClock.Add(31 * time.Second)
	cell := CellFilter{Study: "s1", Task: "credit_ecl", Model: "sim-a", Condition: "baseline"}
	a, b := Window{To: split}, Window{From: split}
	got, err := CompareWindows(ctx, w.DB(), cell, a, b, testOpts)
	if err != nil {
		t.Fatalf("CompareWindows() = %v", err)
	}
	all := want[CellKey{"credit_ecl", "sim-a", "baseline"}]
	var ra, rb []metrics.Run
	for _, r := range all {
		r.PairKey = "" // never paired across windows
		if r.ID < "baseline-3" {
			ra = append(ra, r)
		} else {
			rb = append(rb, r)
		}
	}
	for _, side := range []struct {
		name string
		got  metrics.CellMetrics
		runs []metrics.Run
	}{{"A", got.A.Metrics, ra}, {"B", got.B.Metrics, rb}} {
		m, err := metrics.ComputeCell(side.runs, opts.Cell)
		if err != nil {
			t.Fatal(err)
		}
		if jsonOf(t, side.got) != jsonOf(t, m) {
			t.Errorf("window %s metrics = %s, want %s", side.name, jsonOf(t, side.got), jsonOf(t, m))
		}
	}
	if got.A.Metrics.N != 6 || got.B.Metrics.N != 6 {
		t.Errorf("windows hold %d and %d runs, want 6 and 6", got.A.Metrics.N, got.B.Metrics.N)
	}
	wantCmp, err := metrics.Compare(ra, rb, opts.compareConfig(got.A.Label, got.B.Label))
	if err != nil {
		t.Fatal(err)
	}
	metrics.AdjustBH(wantCmp)
	if jsonOf(t, got.Comparisons) != jsonOf(t, wantCmp) {
		t.Errorf("window comparisons = %s, want %s", jsonOf(t, got.Comparisons), jsonOf(t, wantCmp))
	}
	if len(got.Comparisons) != 7 { // no McNemar across windows
		t.Errorf("%d window comparisons, want 7", len(got.Comparisons))
	}

	// An empty window is no error; two are; a reversed window is invalid.
	late := Window{From: studyClock.Add(24 * time.Hour)}
	if got, err := CompareWindows(ctx, w.DB(), cell, a, late, testOpts); err != nil || got.B.Metrics.N != 0 {
		t.Errorf("CompareWindows(empty B) = %v, %v; want N = 0 and no error", got, err)
	}
	if _, err := CompareWindows(ctx, w.DB(), cell, late, late, testOpts); !errors.Is(err, ErrNoRuns) {
		t.Errorf("CompareWindows(both empty) = %v, want ErrNoRuns", err)
	}
	if _, err := CompareWindows(ctx, w.DB(), cell, Window{From: split, To: split}, b, testOpts); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("CompareWindows(empty interval) = %v, want ErrInvalidOptions", err)
	}
	if _, err := CompareWindows(ctx, w.DB(), CellFilter{Study: "nope"}, a, b, testOpts); !errors.Is(err, ErrNoStudy) {
		t.Errorf("CompareWindows(unknown study) = %v, want ErrNoStudy", err)
	}
}

// TestProductionReleases: a production study's conditions are releases, compared in the
// order they were deployed; its windows pool every release when Condition is empty.
func TestProductionReleases(t *testing.T) {
	w := ingest(t, sampleEnvs(t))
	rep := mustCompute(t, w.DB(), "sample-prod")
	if rep.Study.SourceKind != "production" || rep.Settings.PairRule != RuleConsecutiveReleases {
		t.Fatalf("study %+v, rule %q; want production with consecutive releases", rep.Study, rep.Settings.PairRule)
	}
	if len(rep.Settings.Pairs) != 1 || rep.Settings.Pairs[0] != (Pair{A: "r1", B: "r2"}) {
		t.Errorf("pairs = %v, want r1 → r2", rep.Settings.Pairs)
	}
	if len(rep.Cells) != 2 || rep.Cells[0].Metrics.N != 12 || rep.Cells[1].Metrics.N != 12 {
		t.Errorf("cells = %d, want two releases of 12 runs", len(rep.Cells))
	}
	if len(rep.Comparisons) != 7 {
		t.Errorf("%d comparisons, want 7 (unpaired)", len(rep.Comparisons))
	}
	ctx := warehousetest.Context(t, 30*time.Second)
	got, err := CompareWindows(ctx, w.DB(), CellFilter{Study: "sample-prod"}, Window{}, Window{From: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got.A.Metrics.N != 24 {
		t.Errorf("pooled window holds %d runs, want 24", got.A.Metrics.N)
	}
}

// TestWindowSeries: a cell's metrics over consecutive windows are those of CompareWindows for
// the same windows; an empty window has N = 0; a reversed window is invalid.
func TestWindowSeries(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	ctx := warehousetest.Context(t, 60*time.Second)
	split := studyClock.Add(31 * time.Second)
	late := Window{From: studyClock.Add(24 * time.Hour)}
	cell := CellFilter{Study: "s1", Task: "credit_ecl", Model: "sim-a", Condition: "baseline"}
	a, b := Window{To: split}, Window{From: split, To: late.From}
	got, err := WindowSeriesFrom(ctx, SQLQuerier(w.DB()), cell, []Window{a, b, late}, testOpts)
	if err != nil {
		t.Fatalf("WindowSeriesFrom() = %v", err)
	}
	cmp, err := CompareWindows(ctx, w.DB(), cell, a, b, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d windows, want 3", len(got))
	}
	for i, want := range []WindowCell{cmp.A, cmp.B} {
		if jsonOf(t, got[i]) != jsonOf(t, want) {
			t.Errorf("window %d = %s, want CompareWindows' %s", i, jsonOf(t, got[i]), jsonOf(t, want))
		}
	}
	if got[2].Metrics.N != 0 || got[2].Metrics.Success.Rate.Valid {
		t.Errorf("the empty window = %s, want N = 0 and no success rate", jsonOf(t, got[2].Metrics))
	}
	if _, err := WindowSeriesFrom(ctx, SQLQuerier(w.DB()), cell, []Window{{From: split, To: split}}, testOpts); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("WindowSeriesFrom(empty interval) = %v, want ErrInvalidOptions", err)
	}
	if _, err := WindowSeriesFrom(ctx, SQLQuerier(w.DB()), CellFilter{Study: "nope"}, []Window{a}, testOpts); !errors.Is(err, ErrNoStudy) {
		t.Errorf("WindowSeriesFrom(unknown study) = %v, want ErrNoStudy", err)
	}
}
