package analysis

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/samples"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/metrics"
)

// step is one state of a synthetic run: the tool it calls with args, and whether it is
// retried once first (a failed validation, a retry, the state entered again).
type step struct {
	state, tool string
	args        map[string]any
	retry       bool
	rejected    bool // a tool call refused before the executed one
}

// runSpec is one synthetic run attempt; want returns the metrics.Run the spec says it is.
type runSpec struct {
	cell        CellKey
	run         string
	attempt     int
	input, seed int
	planText    string   // a free-text plan proposed ("" for none)
	reprompts   int      // plans rejected before the last proposal
	steps       []step   // executed in order
	output      any      // nil: no output
	status      string   // run.finished status
	success     bool     // run.finished success
	escalate    bool     // a run.escalated event
	tokens      [2]int64 // prompt, completion per model call
	latencyMS   float64
	unfinished  bool          // no run.finished
	start       time.Duration // offset of run.started from the study clock
	source      events.SourceKind
	sourceID    string
	finishedGap time.Duration
	// gap drops the run's second event (a lost event: the history has a gap); late returns it
	// instead, the dropped event alone, as it arrives after the rest (see synth.late).
	gap   bool
	cause events.Cause // of an errored run
	// inputKey names the run's input (production runs).
	inputKey string
}

func (r runSpec) want(paired bool) metrics.Run {
	m := metrics.Run{ID: r.run, Plan: r.planText, States: []string{}, Tools: []string{}, Calls: []metrics.Call{},
		Output: warehouse.NoOutput, LatencyMS: r.latencyMS, PlanReprompts: r.reprompts}
	if m.Plan == "" && r.reprompts > 0 {
		m.Plan = fmt.Sprintf("draft %d", r.reprompts-1) // the last plan proposed
	}
	calls := 0
	for _, s := range r.steps {
		if s.retry {
			m.States = append(m.States, s.state)
			m.Retries++
			calls++
		}
		if s.rejected {
			m.RejectedToolCalls++
		}
		m.States = append(m.States, s.state)
		m.Tools = append(m.Tools, s.tool)
		m.Calls = append(m.Calls, metrics.Call{Tool: s.tool, Args: string(events.MustCanonical(s.args))})
		calls++
	}
	calls += r.reprompts + boolInt(r.planText != "")
	m.Tokens = int64(calls) * (r.tokens[0] + r.tokens[1])
	if r.output != nil {
		m.Output = string(events.MustCanonical(r.output))
	}
	m.Success = r.success && r.status != events.StatusEscalated && r.status != events.StatusAborted
	m.Escalated = r.escalate || r.status == events.StatusEscalated
	if paired {
		m.PairKey = fmt.Sprintf("input=%d/seed=%d", r.input, r.seed)
	}
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

var studyClock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// synth turns specs into event envelopes.
type synth struct {
	study string
	n     int
	envs  []events.Envelope
	// late holds the events dropped by runSpec.gap, to be sent after the others.
	late []events.Envelope
}

func (s *synth) emit(run string, attempt int, seq int64, at time.Time, src events.Source, p events.Payload) {
	s.n++
	s.envs = append(s.envs, events.Envelope{Schema: events.SchemaVersion, ID: fmt.Sprintf("01AN%s%010d", strings.ToUpper(s.study), s.n),
		Type: p.EventType(), Time: at, Study: s.study, Run: run, Attempt: attempt, Seq: seq, Source: src, Payload: p})
}

func (s *synth) define(cells []events.Cell, paired bool) {
	total := 0
	for _, c := range cells {
		total += c.Runs
	}
	s.emit(events.StudyRun, 1, 0, studyClock, events.Source{Kind: events.SourceHarness, ID: "producer"},
		events.StudyDefined{Name: s.study + " study", Cells: cells, ExpectedRuns: total, Paired: paired})
}

func (s *synth) add(r runSpec) {
	src := events.Source{Kind: events.SourceHarness, ID: "worker-1"}
	if r.source != "" {
		src = events.Source{Kind: r.source, ID: r.sourceID}
	}
	at := studyClock.Add(time.Second + r.start)
	seq := int64(0)
	next := func(p events.Payload) {
		seq++
		at = at.Add(time.Millisecond)
		s.emit(r.run, r.attempt, seq, at, src, p)
		if r.gap && seq == 2 {
			s.late = append(s.late, s.envs[len(s.envs)-1])
			s.envs = s.envs[:len(s.envs)-1]
		}
	}
	seed := int64(1000 + r.seed)
	next(events.RunStarted{Task: r.cell.Task, Model: r.cell.Model, Condition: r.cell.Condition, InputIndex: r.input,
		SeedIndex: r.seed, Components: []string{}, Seed: &seed, InputKey: r.inputKey})
	model := func() {
		next(events.ModelCalled{Model: r.cell.Model, PromptTokens: r.tokens[0], CompletionTokens: r.tokens[1], LatencyMS: 3})
	}
	for i := 0; i < r.reprompts; i++ {
		model()
		next(events.PlanProposed{Text: fmt.Sprintf("draft %d", i), Attempt: i + 1})
		next(events.PlanRejected{Errors: []string{"unknown tool"}, Attempt: i + 1})
	}
	if r.planText != "" {
		model()
		next(events.PlanProposed{Text: r.planText, Attempt: r.reprompts + 1})
	}
	for i, st := range r.steps {
		if st.retry {
			next(events.StateEntered{State: st.state})
			model()
			next(events.OutputInvalid{State: st.state, Errors: []string{"out of range"}})
			next(events.StateExited{State: st.state, Outcome: "invalid"})
			next(events.RetryScheduled{State: st.state, Attempt: 1, Reason: "invalid output"})
		}
		next(events.StateEntered{State: st.state})
		model()
		id := fmt.Sprintf("c%d", i)
		if st.rejected {
			next(events.ToolRejected{CallID: id + "r", Tool: st.tool, Reason: events.RejectSchema, State: st.state})
		}
		next(events.ToolCalled{CallID: id, Tool: st.tool, Args: events.MustCanonical(st.args), State: st.state})
		next(events.ToolReturned{CallID: id, Tool: st.tool, OK: true, Output: events.MustCanonical(true), DurationMS: 1})
		next(events.StateExited{State: st.state, Outcome: "ok"})
	}
	if r.escalate {
		next(events.RunEscalated{Reason: "gave up"})
	}
	if r.unfinished {
		return
	}
	w := r.want(false)
	var out []byte
	if r.output != nil {
		out = events.MustCanonical(r.output)
	}
	calls := 0
	for _, st := range r.steps {
		calls += 1 + boolInt(st.retry)
	}
	calls += r.reprompts + boolInt(r.planText != "")
	next(events.RunFinished{Status: r.status, Success: r.success, Output: out, Cause: r.cause, Totals: events.Totals{
		PromptTokens: int64(calls) * r.tokens[0], CompletionTokens: int64(calls) * r.tokens[1], ModelCalls: calls,
		ToolCalls: len(w.Tools), Retries: w.Retries, PlanReprompts: r.reprompts, RejectedToolCalls: w.RejectedToolCalls,
		LatencyMS: r.latencyMS}})
}

// harnessStudy builds a paired study with three conditions of one task and a small second
// task: varied traces, failed, escalated and aborted runs, a superseded attempt, a re-executed
// attempt, an incomplete run, a cell of one scored run beside two errored ones, an all-failed
// cell with a run whose history has a gap. It returns the envelopes and the scored runs by
// cell, as the spec defines them, built from the specs alone.
func harnessStudy(study string) ([]events.Envelope, map[CellKey][]metrics.Run) {
	rng := rand.New(rand.NewPCG(7, 11))
	s := &synth{study: study}
	const t1, t2, m1 = "credit_ecl", "kyc_check", "sim-a"
	conds := []string{"baseline", "harness", "harness_sp"}
	s.define([]events.Cell{
		{Task: t1, Model: m1, Condition: "baseline", Runs: 13}, {Task: t1, Model: m1, Condition: "harness", Runs: 13},
		{Task: t1, Model: m1, Condition: "harness_sp", Runs: 12},
		{Task: t2, Model: m1, Condition: "baseline", Runs: 3}, {Task: t2, Model: m1, Condition: "harness", Runs: 4},
		{Task: t2, Model: m1, Condition: "missing", Runs: 2},
	}, true)
	want := map[CellKey][]metrics.Run{}
	counted := func(r runSpec) {
		s.add(r)
		want[r.cell] = append(want[r.cell], r.want(true))
	}
	for ci, cond := range conds {
		// Variance falls from baseline to harness_sp: fewer variants of tools, args and outputs.
		variants := 4 - ci
		for in := 0; in < 6; in++ {
			for sd := 0; sd < 2; sd++ {
				v := rng.IntN(variants)
				steps := []step{
					{state: "load", tool: "load_data", args: map[string]any{"path": "loans.csv"}},
					{state: "score", tool: "score", args: map[string]any{"pd": 0.1 * float64(1+v%2), "segments": []any{"a", "b"}[:1+v%2]}, retry: v == 2},
				}
				if v != 1 {
					steps = append(steps, step{state: "report", tool: "report", args: map[string]any{"format": "json"}, rejected: v == 3})
				}
				status, success := events.StatusSucceeded, true
				switch rng.IntN(8) {
				case 0:
					status, success = events.StatusFailed, false
				case 1:
					status, success = events.StatusEscalated, false
				case 2:
					if cond == "baseline" {
						status, success = events.StatusAborted, false
					}
				}
				r := runSpec{cell: CellKey{t1, m1, cond}, run: fmt.Sprintf("%s-%d-%d", cond, in, sd), attempt: 1,
					input: in, seed: sd, planText: []string{"load then score", "load, score, report", ""}[v%3],
					reprompts: v % 2, steps: steps, output: map[string]any{"ecl": 1.5 * float64(1+v%variants)},
					status: status, success: success, escalate: status == events.StatusEscalated,
					tokens: [2]int64{100 + int64(rng.IntN(50)), 10 + int64(rng.IntN(5))}, latencyMS: 50 + float64(rng.IntN(400)),
					start: time.Duration(ci*100+in*10+sd) * time.Second}
				if status == events.StatusAborted {
					r.output = nil
				}
				if in == 2 && sd == 1 && cond == "harness" {
					// Crash-aborted attempt 1 (no run.finished), then attempt 2 finishes.
					a1 := r
					a1.unfinished = true
					s.add(a1)
					r.attempt = 2
					r.start += time.Second
				}
				if in == 3 && sd == 0 && cond == "harness_sp" {
					// Attempt 1 finished but its job was redelivered: attempt 2 counts.
					a1 := r
					a1.latencyMS++
					s.add(a1)
					r.attempt = 2
					r.start += time.Second
				}
				if status == events.StatusAborted {
					s.add(r) // interrupted: counted in the data, not scored
				} else {
					counted(r)
				}
			}
		}
	}
	// An interrupted run of baseline: aborted, counted in the data, not scored.
	s.add(runSpec{cell: CellKey{t1, m1, "baseline"}, run: "baseline-9-0", attempt: 1, input: 9, status: events.StatusAborted,
		steps: []step{{state: "load", tool: "load_data", args: map[string]any{"path": "loans.csv"}}}, tokens: [2]int64{1, 1}, start: 890 * time.Second})
	// An incomplete run of harness (expected 13, 12 counted).
	s.add(runSpec{cell: CellKey{t1, m1, "harness"}, run: "harness-9-0", attempt: 1, input: 9, unfinished: true,
		steps: []step{{state: "load", tool: "load_data", args: map[string]any{"path": "loans.csv"}}}, tokens: [2]int64{1, 1}, start: 900 * time.Second})
	// Task 2: a one-run baseline and an all-failed harness cell.
	counted(runSpec{cell: CellKey{t2, m1, "baseline"}, run: "kyc-b-0", attempt: 1, input: 0, seed: 0,
		steps: []step{{state: "check", tool: "lookup", args: map[string]any{"id": 1}}}, output: map[string]any{"ok": true},
		status: events.StatusSucceeded, success: true, tokens: [2]int64{80, 8}, latencyMS: 40, start: 1000 * time.Second})
	// Two runs of the baseline whose model was never reached: errored, not scored, so that
	// the cell still has one scored run (and null pairwise metrics, not 1).
	for i := 1; i <= 2; i++ {
		s.add(runSpec{cell: CellKey{t2, m1, "baseline"}, run: fmt.Sprintf("kyc-b-%d", i), attempt: 1, input: i, seed: 0,
			status: events.StatusErrored, start: time.Duration(1000+i) * time.Second,
			cause: events.Cause{Kind: events.CauseMissingKey, Permanent: true, Endpoint: "openai", Detail: "OPENAI_API_KEY is not set"}})
	}
	// A finished run of the harness cell whose second event was lost: incomplete, not scored.
	s.add(runSpec{cell: CellKey{t2, m1, "harness"}, run: "kyc-h-gap", attempt: 1, input: 5, seed: 0, gap: true,
		steps: []step{{state: "check", tool: "lookup", args: map[string]any{"id": 1}}}, output: map[string]any{"ok": true},
		status: events.StatusSucceeded, success: true, tokens: [2]int64{80, 8}, latencyMS: 40, start: 1020 * time.Second})
	for i := 0; i < 3; i++ {
		counted(runSpec{cell: CellKey{t2, m1, "harness"}, run: fmt.Sprintf("kyc-h-%d", i), attempt: 1, input: i, seed: 0,
			steps: []step{{state: "check", tool: "lookup", args: map[string]any{"id": 1 + i%2}}}, output: map[string]any{"ok": false},
			status: events.StatusFailed, success: false, tokens: [2]int64{80, 8}, latencyMS: 40 + float64(i), start: time.Duration(1010+i) * time.Second})
	}
	for k := range want {
		slices.SortFunc(want[k], func(a, b metrics.Run) int { return strings.Compare(a.ID, b.ID) })
	}
	return s.envs, want
}

// ingest publishes envs to a fresh embedded nats-server (many in flight, as the default
// publisher does) and ingests them into a new DuckDB file through the warehouse; it returns the
// open warehouse.
func ingest(t testing.TB, envs []events.Envelope) *warehouse.Warehouse {
	t.Helper()
	b := bustest.NewServer(t).Connect(t)
	warehousetest.PublishFast(t, b, warehousetest.EnvelopeMsgs(t, envs))
	return warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond})
}

// sampleEnvs returns the bundled production traces (study sample-prod, releases r1 and r2).
func sampleEnvs(t testing.TB) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatalf("sample: %v", err)
		}
		out = append(out, e)
	}
	return out
}
