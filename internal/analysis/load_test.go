package analysis

import (
	"context"
	"slices"
	"strings"
	"testing"

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
