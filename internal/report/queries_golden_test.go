package report_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

// goldenClock is the time of the synthetic study's first event.
var goldenClock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// us is t in microseconds since the epoch, the unit of the Report statements' time parameters.
func us(t time.Time) int64 { return t.UnixMicro() }

// reportCases give each Report statement one or more parameter lists; every list runs and the
// results go, in order, into testdata/golden/<name>.golden.
var reportCases = map[string][][]any{
	"report_basis": {
		{"s1"},          // report.published and rejected messages set apart
		{"sample-prod"}, // production, nothing rejected
		{"nope"},        // no events: zero counts, NULL times
	},
	"report_cells": {
		{"s1"},
		{"sample-prod"},
	},
	"report_studies": {nil},
	"report_context": {{"s1"}}, // no context-managed run: no row (TestComputeContext covers the rows)
	// Studies without coding runs: no rows (their events must not trip the view's casts).
	"report_coding": {{"s1"}, {"sample-prod"}},
	"report_window_cells": {
		// Half-open: from r1-run-004's start (kept) to r2-run-004's start (left out).
		{"sample-prod", us(time.Date(2026, 11, 2, 10, 0, 0, 103e6, time.UTC)), us(time.Date(2026, 11, 2, 13, 0, 0, 144e6, time.UTC))},
		{"s1", us(goldenClock), us(goldenClock.Add(time.Hour))},
		{"s1", us(goldenClock.Add(-2 * time.Hour)), us(goldenClock.Add(-time.Hour))}, // before every run: no rows
	},
}

// TestReportQueriesGolden executes every Report statement of package queries against a
// database filled through the real ingestion path (embedded nats-server, warehouse CatchUp) with
// the production samples and a small synthetic harness study, and compares the results with
// testdata/golden/<name>.golden (go test -run TestReportQueriesGolden -update).
func TestReportQueriesGolden(t *testing.T) {
	warehousetest.CheckQueriesGolden(t, reportGoldenDB(t), queries.Report, reportCases)
}

// reportGoldenDB ingests the production samples, the synthetic study s1, a study with no run
// (only study.defined) and two poison messages, one on s1's subjects, and returns the database.
func reportGoldenDB(t *testing.T) *sql.DB {
	t.Helper()
	return warehousetest.GoldenDB(t, append(warehousetest.EnvelopeMsgs(t, syntheticStudy()),
		warehousetest.Msg{Subject: "ditto.events.s1.a-0.run.finished", ID: "poison-s1", Data: []byte("{")},
		warehousetest.Msg{Subject: "ditto.events.other.x.run.started", ID: "poison-other", Data: []byte("not json")},
	))
}

// syntheticStudy is study s1: two simulated cells of credit_ecl (baseline on two workers;
// harness with a crashed first attempt, then a finished second, and a run whose only attempt
// is still running), one real-model cell of kyc_check, a report.published an hour after the
// last run event; and study empty, defined without runs.
func syntheticStudy() []events.Envelope {
	var out []events.Envelope
	n := 0
	emit := func(study, run string, attempt int, seq int64, at time.Duration, src string, p events.Payload) {
		n++
		out = append(out, events.Envelope{Schema: events.SchemaVersion, ID: fmt.Sprintf("01RPGOLDEN%010d", n), Type: p.EventType(),
			Time: goldenClock.Add(at), Study: study, Run: run, Attempt: attempt, Seq: seq,
			Source: events.Source{Kind: events.SourceHarness, ID: src}, Payload: p})
	}
	type runSpec struct {
		run                    string
		attempt                int
		task, model, condition string
		components             []string
		simulated, unfinished  bool
		worker                 string
		start                  time.Duration
	}
	emit("s1", events.StudyRun, 1, 0, 0, "producer", events.StudyDefined{Name: "s1 study", ExpectedRuns: 5, Cells: []events.Cell{
		{Task: "credit_ecl", Model: "sim-a", Condition: "baseline", Runs: 2},
		{Task: "credit_ecl", Model: "sim-a", Condition: "harness", Runs: 2},
		{Task: "kyc_check", Model: "gpt-x", Condition: "baseline", Runs: 1},
	}})
	harness := []string{events.ComponentFSM, events.ComponentRetry}
	for _, r := range []runSpec{
		{"a-0", 1, "credit_ecl", "sim-a", "baseline", []string{}, true, false, "worker-1", time.Second},
		{"a-1", 1, "credit_ecl", "sim-a", "baseline", []string{}, true, false, "worker-2", 2 * time.Second},
		{"h-0", 1, "credit_ecl", "sim-a", "harness", harness, true, true, "worker-1", 3 * time.Second},
		{"h-0", 2, "credit_ecl", "sim-a", "harness", harness, true, false, "worker-1", 4 * time.Second},
		{"h-1", 1, "credit_ecl", "sim-a", "harness", harness, true, true, "worker-2", 5 * time.Second},
		{"k-0", 1, "kyc_check", "gpt-x", "baseline", []string{}, false, false, "worker-1", 6 * time.Second},
	} {
		emit("s1", r.run, r.attempt, 1, r.start, r.worker, events.RunStarted{Task: r.task, Model: r.model, Condition: r.condition,
			Components: r.components, Simulated: r.simulated})
		if !r.unfinished {
			emit("s1", r.run, r.attempt, 2, r.start+500*time.Millisecond, r.worker,
				events.RunFinished{Status: events.StatusSucceeded, Success: true})
		}
	}
	emit("s1", events.StudyRun, 1, 0, time.Hour, "scheduler", events.ReportPublished{Name: "s1", Path: "reports/s1",
		Formats: []string{"md"}, Studies: []string{"s1"}})
	emit("empty", events.StudyRun, 1, 0, 0, "producer", events.StudyDefined{Name: "empty study", ExpectedRuns: 1,
		Cells: []events.Cell{{Task: "credit_ecl", Model: "sim-a", Condition: "baseline", Runs: 1}}})
	return out
}
