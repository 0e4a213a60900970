package console_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

// goldenClock is the time of the synthetic study's first event.
var goldenClock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// consoleCases give each Console statement one or more parameter lists; every list runs and
// the results go, in order, into testdata/golden/<name>.golden.
var consoleCases = map[string][][]any{
	"console_studies": {nil},
	"console_cells":   {{"c1"}, {"sample-prod"}, {"nope"}},
	"console_cell_groups": {
		{"c1", "lookup", "sim-a", "harness"}, // three runs, two traces; an unfinished run is not scored
		{"sample-prod", "invoice_triage", "gpt-4o-mini", "r1"},
		{"c1", "lookup", "sim-a", "nope"}, // no such cell: no rows
	},
	"console_cell_runs": {
		{"c1", "lookup", "sim-a", "harness", nil},    // every scored run, h-0 by its second attempt
		{"c1", "lookup", "sim-a", "harness", "nope"}, // no such group: no rows
	},
	"console_cell_unscored": {
		{"c1", "lookup", "sim-a", "harness"}, // h-3 started and never finished
		{"sample-prod", "invoice_triage", "gpt-4o-mini", "r1"},
	},
	"console_run": {
		{"c1", "h-0"}, // an aborted first attempt, a finished second
		{"c1", "h-3"}, // incomplete
		{"sample-prod", "r1-run-000"},
		{"c1", "nope"},
	},
	"console_run_events": {
		{"c1", "h-0", 2},
		{"sample-prod", "r1-run-000", 1},
		{"c1", "h-0", 9}, // no such attempt
	},
	"console_watermark":   {{nil}, {"c1"}, {"nope"}},
	"console_drift_cells": {{"sample-prod"}, {"c1"}, {"nope"}},
}

// TestConsoleQueriesGolden executes every Console statement of package queries against a
// database filled through the real ingestion path (embedded nats-server, warehouse ingestion)
// with the production samples and a small synthetic harness study, and compares the results
// with testdata/golden/<name>.golden (go test -run TestConsoleQueriesGolden -update).
func TestConsoleQueriesGolden(t *testing.T) {
	warehousetest.CheckQueriesGolden(t, consoleGoldenDB(t), queries.Console, consoleCases)
}

// consoleGoldenDB ingests the production samples and the synthetic study c1 and returns the
// database.
func consoleGoldenDB(t *testing.T) *sql.DB {
	t.Helper()
	return warehousetest.GoldenDB(t, warehousetest.EnvelopeMsgs(t, syntheticStudy()))
}

// syntheticStudy is study c1: one harness cell of task lookup whose runs part ways — h-0 (a
// first attempt that never finished, then a second) and h-1 call find then fetch with the
// same arguments, h-2 calls find with another argument; h-3 started and never finished — and
// one baseline run.
func syntheticStudy() []events.Envelope {
	var out []events.Envelope
	n := 0
	emit := func(run string, attempt int, seq int64, at time.Duration, p events.Payload) {
		n++
		out = append(out, events.Envelope{Schema: events.SchemaVersion, ID: fmt.Sprintf("01CNGOLDEN%010d", n), Type: p.EventType(),
			Time: goldenClock.Add(at), Study: "c1", Run: run, Attempt: attempt, Seq: seq,
			Source: events.Source{Kind: events.SourceHarness, ID: "worker-1"}, Payload: p})
	}
	emit(events.StudyRun, 1, 0, 0, events.StudyDefined{Name: "c1 study", ExpectedRuns: 5, Cells: []events.Cell{
		{Task: "lookup", Model: "sim-a", Condition: "harness", Runs: 4},
		{Task: "lookup", Model: "sim-a", Condition: "baseline", Runs: 1},
	}})
	type runSpec struct {
		run        string
		attempt    int
		condition  string
		query      string // find's argument; "" for no tool call
		unfinished bool
		start      time.Duration
	}
	for _, r := range []runSpec{
		{"h-0", 1, "harness", "acme", true, time.Second},
		{"h-0", 2, "harness", "acme", false, 2 * time.Second},
		{"h-1", 1, "harness", "acme", false, 3 * time.Second},
		{"h-2", 1, "harness", "ACME Inc", false, 4 * time.Second},
		{"h-3", 1, "harness", "acme", true, 5 * time.Second},
		{"b-0", 1, "baseline", "", false, 6 * time.Second},
	} {
		components := []string{}
		if r.condition == "harness" {
			components = []string{events.ComponentFSM}
		}
		emit(r.run, r.attempt, 1, r.start, events.RunStarted{Task: "lookup", Model: "sim-a", Condition: r.condition,
			Components: components, Simulated: true})
		seq := int64(1)
		at := r.start
		next := func(p events.Payload) {
			seq++
			at += 10 * time.Millisecond
			emit(r.run, r.attempt, seq, at, p)
		}
		calls := 0
		if r.query != "" {
			next(events.StateEntered{State: "search"})
			args, _ := json.Marshal(map[string]any{"q": r.query, "limit": 5})
			next(events.ToolCalled{CallID: "c1", Tool: "find", Args: args, State: "search"})
			next(events.ToolReturned{CallID: "c1", Tool: "find", OK: true, Output: json.RawMessage(`{"id":7}`), DurationMS: 1.5})
			next(events.ToolCalled{CallID: "c2", Tool: "fetch", Args: json.RawMessage(`{"id":7}`), State: "search"})
			next(events.ToolReturned{CallID: "c2", Tool: "fetch", OK: true, Output: json.RawMessage(`{"name":"Acme"}`), DurationMS: 2})
			next(events.StateExited{State: "search", Outcome: "ok"})
			calls = 2
		}
		if !r.unfinished {
			next(events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: json.RawMessage(`{"name":"Acme"}`),
				Totals: events.Totals{ToolCalls: calls}})
		}
	}
	return out
}
