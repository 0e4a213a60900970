package queries

import (
	"os"
	"strings"
	"testing"
)

// TestEveryFileReferenced fails when a .sql file is not reachable from All (dead SQL), when
// two variables load the same file, or when a file holds more than one statement or lacks its
// header comment. (Each statement is executed against DuckDB with golden results by
// internal/warehouse's TestQueriesGolden.)
func TestEveryFileReferenced(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	referenced := map[string]int{}
	for _, s := range All() {
		referenced[s.Name+".sql"]++
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		switch n := referenced[e.Name()]; {
		case n == 0:
			t.Errorf("%s is not referenced by queries.go (add it to a variable and to All)", e.Name())
		case n > 1:
			t.Errorf("%s is referenced %d times by All", e.Name(), n)
		}
		delete(referenced, e.Name())
	}
	for name := range referenced {
		t.Errorf("All references %s, which does not exist", name)
	}
}

func TestOneStatementPerFileWithHeader(t *testing.T) {
	for _, s := range All() {
		body := s.SQL
		if !strings.HasPrefix(body, "-- "+s.Name+": ") {
			t.Errorf("%s: header comment must start with %q", s.Name, "-- "+s.Name+": ")
		}
		for _, want := range []string{"Inputs:", "Outputs:"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: header comment lacks %q", s.Name, want)
			}
		}
		if n := strings.Count(stripComments(body), ";"); n != 1 {
			t.Errorf("%s: %d statements (semicolons), want 1", s.Name, n)
		}
	}
}

func stripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	// String literals in these files hold no semicolons.
	return b.String()
}

func TestObjects(t *testing.T) {
	want := []string{"events", "rejected_events", "ingest_state", "run_folds", "runs", "plans", "transitions",
		"tool_calls", "validations", "model_calls", "studies", "cells", "anomalies", "context_series", "coding_runs"}
	got := Tables()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Tables() = %v, want %v", got, want)
	}
}

func TestPublic(t *testing.T) {
	var names []string
	for _, o := range Public() {
		names = append(names, o.Name)
		if o.Description == "" || strings.Contains(o.Description, "--") || !strings.HasSuffix(o.Description, ".") {
			t.Errorf("%s: description %q, want one sentence", o.Name, o.Description)
		}
	}
	want := "events,rejected_events,runs,plans,transitions,tool_calls,validations,model_calls,studies,cells,anomalies,context_series,coding_runs,metrics,comparisons"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("Public() = %s, want %s", got, want)
	}
	if got := strings.Join(Internal(), ","); got != "ingest_state,run_fold_rows,run_folds" {
		t.Errorf("Internal() = %s", got)
	}
	if d := ViewRuns.Description(); d != "one row per run attempt (harness and production alike)." {
		t.Errorf("runs description %q", d)
	}
}
