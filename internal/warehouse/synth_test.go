package warehouse_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// synth builds harness-like histories with the events package.
type synth struct {
	t     testing.TB
	study string
	clock time.Time
	n     int
	out   []msg
}

func newSynth(t testing.TB, study string) *synth {
	return &synth{t: t, study: study, clock: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
}

func (s *synth) id() string {
	s.n++
	return fmt.Sprintf("01SYN%s%012d", s.study, s.n) // unique across studies, sortable
}

// emit appends one event of run/attempt with the given seq.
func (s *synth) emit(run string, attempt int, seq int64, p events.Payload) {
	s.clock = s.clock.Add(1500 * time.Microsecond)
	e := events.Envelope{Schema: events.SchemaVersion, ID: s.id(), Type: p.EventType(), Time: s.clock,
		Study: s.study, Run: run, Attempt: attempt, Seq: seq,
		Source: events.Source{Kind: events.SourceHarness, ID: "worker-1"}, Payload: p}
	s.out = append(s.out, warehousetest.EnvelopeMsg(s.t, &e))
}

func (s *synth) define(cells []events.Cell) {
	total := 0
	for _, c := range cells {
		total += c.Runs
	}
	s.emit(events.StudyRun, 1, 0, events.StudyDefined{Name: s.study, Cells: cells, ExpectedRuns: total})
}

var graph = map[string][]string{"load": {"score"}, "score": {"report"}, "report": {}}

// runOpts shape one synthetic run attempt.
type runOpts struct {
	condition   string
	variant     int  // changes the arguments of the second call
	unfinished  bool // no run.finished
	illegal     bool // a tool.returned for a call never made
	wrongTotals bool // run.finished totals disagree with the events
	retry       bool // one retry of the score state
}

// run emits one attempt of a three-state harness run; it returns the number of events.
func (s *synth) run(run string, attempt int, o runOpts) int {
	seq := int64(0)
	next := func(p events.Payload) { seq++; s.emit(run, attempt, seq, p) }
	seed := int64(42)
	next(events.RunStarted{Task: "credit_ecl", Model: "sim-a", Condition: o.condition, InputIndex: 1, SeedIndex: attempt,
		Components: []string{events.ComponentForcedTool, events.ComponentFSM}, Seed: &seed, Start: "load", Graph: graph, Simulated: true})
	next(events.PlanProposed{Text: "load, score, report", Attempt: 1, Structured: true})
	next(events.PlanAccepted{Steps: []events.PlanStep{{State: "load", Tool: "load_data"}, {State: "score", Tool: "score"}, {State: "report", Tool: "report"}}})
	var prompt int64
	call := 0
	step := func(state, tool string, args map[string]any) {
		next(events.StateEntered{State: state})
		next(events.ModelCalled{Model: "sim-a", Purpose: "act", PromptTokens: 100, CompletionTokens: 10, LatencyMS: 5})
		prompt += 100
		call++
		id := fmt.Sprintf("c%d", call)
		next(events.ToolCalled{CallID: id, Tool: tool, Args: events.MustCanonical(args), State: state})
		next(events.ToolReturned{CallID: id, Tool: tool, OK: true, Output: events.MustCanonical(map[string]any{"ok": true}), DurationMS: 1})
		next(events.OutputValidated{State: state, Tool: tool})
		next(events.StateExited{State: state, Outcome: "ok"})
	}
	step("load", "load_data", map[string]any{"path": "loans.csv"})
	if o.retry {
		next(events.StateEntered{State: "score"})
		next(events.ModelCalled{Model: "sim-a", Purpose: "act", PromptTokens: 100, CompletionTokens: 10, LatencyMS: 5})
		prompt += 100
		next(events.OutputInvalid{State: "score", Errors: []string{"pd out of range"}})
		next(events.StateExited{State: "score", Outcome: "invalid"})
		next(events.RetryScheduled{State: "score", Attempt: 1, Reason: "invalid output"})
	}
	step("score", "score", map[string]any{"pd": 0.1 * float64(o.variant+1)})
	if o.illegal {
		next(events.ToolReturned{CallID: "ghost", Tool: "score", OK: true, Output: events.MustCanonical(1), DurationMS: 1})
	}
	step("report", "report", map[string]any{"format": "json"})
	if o.unfinished {
		return int(seq)
	}
	totals := events.Totals{PromptTokens: prompt, CompletionTokens: int64(10 * (call + boolInt(o.retry))), ModelCalls: call + boolInt(o.retry),
		ToolCalls: call, Retries: boolInt(o.retry), LatencyMS: 12.5}
	if o.wrongTotals {
		totals.PromptTokens++
	}
	next(events.RunFinished{Status: events.StatusSucceeded, Success: true,
		Output: events.MustCanonical(map[string]any{"ecl": 1.5 * float64(o.variant+1)}), Totals: totals})
	return int(seq)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// harnessStudy is a small study with every kind of run the projection distinguishes.
func harnessStudy(t testing.TB, study string) []msg {
	s := newSynth(t, study)
	s.define([]events.Cell{{Task: "credit_ecl", Model: "sim-a", Condition: "baseline", Runs: 4},
		{Task: "credit_ecl", Model: "sim-a", Condition: "harness", Runs: 3}})
	s.run("b-0", 1, runOpts{condition: "baseline"})
	s.run("b-1", 1, runOpts{condition: "baseline", variant: 1})
	s.run("b-2", 1, runOpts{condition: "baseline", unfinished: true}) // aborted: superseded by attempt 2
	s.run("b-2", 2, runOpts{condition: "baseline", retry: true})
	s.run("b-3", 1, runOpts{condition: "baseline", unfinished: true}) // incomplete
	s.run("h-0", 1, runOpts{condition: "harness"})
	s.run("h-1", 1, runOpts{condition: "harness", illegal: true})     // fold error
	s.run("h-2", 1, runOpts{condition: "harness", wrongTotals: true}) // check error
	return s.out
}

// codingStudy is a study of coding runs: c-0 fixes the defect at its second patch after a
// refused test edit (a re-patch of the same file), c-1 gives up after one failed patch.
func codingStudy(t testing.TB, study string) []msg {
	s := newSynth(t, study)
	s.define([]events.Cell{{Task: "coding-ledger-rounding", Model: "sim-a", Condition: "protected", Runs: 2}})
	s.codingRun("c-0", 0, true)
	s.codingRun("c-1", 1, false)
	return s.out
}

// codingRun emits one attempt of a coding run.
func (s *synth) codingRun(run string, seedIndex int, fixed bool) {
	seq := int64(0)
	next := func(p events.Payload) { seq++; s.emit(run, 1, seq, p) }
	seed := int64(7 + seedIndex)
	next(events.RunStarted{Task: "coding-ledger-rounding", Instance: "rounding", Model: "sim-a", Condition: "protected",
		SeedIndex: seedIndex, Components: []string{events.ComponentTestProtection}, Seed: &seed, Simulated: true})
	ws := events.WorkspaceCreated{Repo: "ledger", Instance: "rounding", Commit: "c0ffee", Isolation: "network netns"}
	next(ws)
	verify := func(turn int, pass bool, ms float64) {
		v := events.VerificationRan{Turn: turn, Command: "go build ./... && go vet ./... && go test -count=1 -v ./...",
			DurationMS: ms, TestsPass: pass, RawBytes: 400}
		ds := []events.Diagnostic{}
		if !pass {
			v.ExitCode, v.FailingTests = 1, 1
			ds = append(ds, events.Diagnostic{File: "money_test.go", Line: 12, Kind: "test_failure", Message: "TestToCents: got 1, want 2"})
		}
		next(v)
		next(events.DiagnosticsDistilled{Turn: turn, Diagnostics: ds, Total: len(ds), RawBytes: 400, DistilledBytes: 60,
			RawTokens: 100, DistilledTokens: 15, Distilled: false})
	}
	calls, tools, rejected := 0, 0, 0
	model := func() {
		calls++
		next(events.ModelCalled{Model: "sim-a", Purpose: "act", PromptTokens: 300, CompletionTokens: 40, LatencyMS: 5})
	}
	edit := func(id, path string, repatch bool) {
		tools++
		args := events.MustCanonical(map[string]any{"path": path})
		next(events.ToolCalled{CallID: id, Tool: "edit_file", Args: args})
		next(events.FileChanged{CallID: id, Path: path, Added: 1, Removed: 1, Repatch: repatch})
		next(events.ToolReturned{CallID: id, Tool: "edit_file", OK: true, Output: events.MustCanonical("edited"), DurationMS: 1})
	}
	verify(0, false, 1200)
	model()
	edit("c1", "money.go", false)
	verify(1, false, 900)
	model()
	if !fixed {
		next(events.WorkspaceDiscarded{Repo: ws.Repo, Instance: ws.Instance, Commit: ws.Commit})
		next(events.RunFinished{Status: events.StatusFailed, Error: "verification failed",
			Totals: events.Totals{PromptTokens: 600, CompletionTokens: 80, ModelCalls: calls, ToolCalls: tools, LatencyMS: 2500}})
		return
	}
	rejected++
	next(events.ToolRejected{CallID: "c2", Tool: "edit_file", Reason: events.RejectTestProtected, Detail: "money_test.go is a test file"})
	edit("c3", "money.go", true)
	verify(2, true, 800)
	next(events.WorkspaceDiscarded{Repo: ws.Repo, Instance: ws.Instance, Commit: ws.Commit})
	next(events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: events.MustCanonical(map[string]any{"patch": "diff"}),
		Totals: events.Totals{PromptTokens: 600, CompletionTokens: 80, ModelCalls: calls, ToolCalls: tools, RejectedToolCalls: rejected, LatencyMS: 3100}})
}
