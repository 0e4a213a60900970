package analysis

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// TestLoadPairedRunsNeedsTheSettingColumns: a statement's columns without one of a run's
// setting columns are refused before any query, naming the statement and the column; the
// coding and context sections' columns have them all.
func TestLoadPairedRunsNeedsTheSettingColumns(t *testing.T) {
	for _, cols := range [][]string{codingCols, contextCols} {
		for _, name := range settingCols {
			if !slices.Contains(cols, name) {
				t.Errorf("columns %v have no %s", cols, name)
			}
		}
	}
	cols := slices.DeleteFunc(slices.Clone(contextCols), func(c string) bool { return c == "components" })
	decode := func(*row, runSetting) contextRun { return contextRun{} }
	_, err := loadPairedRuns(context.Background(), nil, queries.ReportContext, "s", cols, decode)
	if err == nil || !strings.Contains(err.Error(), "report_context") || !strings.Contains(err.Error(), "components") {
		t.Errorf("loadPairedRuns(columns without components) = %v, want an error naming report_context and components", err)
	}
}

// rowsOnly hides a Querier's record batches, so that loadRuns reads every statement row by row.
type rowsOnly struct{ Querier }

// TestLoadRunsBatches: the runs loadRuns makes from analysis_runs' record batches (Snapshot's
// Querier in a duckdb_arrow build) are those it makes from its rows, for every study of the
// golden fixture (a paired harness study with superseded and unscored attempts, and production
// traffic with input keys), whole and within a cell and a window.
func TestLoadRunsBatches(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, append(envs, sampleEnvs(t)...))
	ctx := warehousetest.Context(t, 60*time.Second)
	q, done, err := Snapshot(ctx, w.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, ok := q.(batchQuerier); !ok {
		if warehouse.LoadPath == "arrow" {
			t.Fatal("Snapshot's Querier reads no record batches in a duckdb_arrow build")
		}
		t.Skip("no Arrow interface in this build (build tag duckdb_arrow)")
	}
	studies := warehousetest.Strings(t, w.DB(), "SELECT DISTINCT study FROM run_fold_rows ORDER BY study")
	to := studyClock.Add(41 * time.Second).UnixMicro()
	var total, keyed, pairs int
	for _, study := range studies {
		st, err := loadStudy(ctx, q, study)
		if err != nil {
			t.Fatal(err)
		}
		for _, sel := range []selection{{study: study}, {study: study, task: "credit_ecl", model: "sim-a", toUS: &to}} {
			want, err := loadRuns(ctx, rowsOnly{q}, sel, st.Paired, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := loadRuns(ctx, q, sel, st.Paired, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: the runs from record batches differ from those from rows:\n%v\nwant\n%v", sel, got, want)
			}
			for _, runs := range got {
				for _, r := range runs {
					total++
					keyed += min(len(r.InputKey), 1)
					pairs += min(len(r.PairKey), 1)
				}
			}
		}
	}
	if len(studies) < 2 || total == 0 || keyed == 0 || pairs == 0 {
		t.Errorf("%d studies, %d runs, %d with an input key, %d paired: the fixture no longer covers what this test compares", len(studies), total, keyed, pairs)
	}
}

// TestTraceKeyCollision: two distinct traces of a cell with the same trace key (a hash
// collision) are an error naming both, never one trace whose runs the other's would join.
func TestTraceKeyCollision(t *testing.T) {
	l := &traceLoader{contents: map[traceKey]*content{}, callsMemo: map[string][]metrics.Call{}}
	cell := CellKey{"t", "m", "c"}
	for _, sig := range []string{"aa", "bb"} {
		err := l.add(&traceValues{key: traceKey{cell, 42}, sigTrace: sig, sigTools: "tt", calls: "[]", runs: 1})
		if sig == "aa" && err != nil {
			t.Fatal(err)
		}
		if sig == "bb" && (err == nil || !strings.Contains(err.Error(), "aa/tt and bb/tt") || !strings.Contains(err.Error(), "collision")) {
			t.Errorf("a second trace with key 42: %v, want an error naming both traces", err)
		}
	}
	if err := l.add(&traceValues{key: traceKey{CellKey{"t", "m", "other"}, 42}, sigTrace: "bb", calls: "[]"}); err != nil {
		t.Errorf("the same key in another cell: %v", err)
	}
}
