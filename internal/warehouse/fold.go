package warehouse

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/metrics"
)

// StatusIncomplete is the status of a run in the projection while its history has a gap or an
// event the fold refuses (and, in the runs view, of an attempt without run.finished).
const StatusIncomplete = "incomplete"

// NoOutput is the value of runs.output (and of the output fed to sig_output) for a run that
// produced no output. It is not valid JSON, so it never equals a real output.
const NoOutput = "<none>"

// histEvent is one stored event of an attempt's history.
type histEvent struct {
	env       events.Envelope
	streamSeq uint64
}

// foldRow is one row of run_fold_rows (run_folds as stored): its columns as typed fields, in
// the columns' order, beside flags that say which columns are NULL (a column's NULL is the
// zero value or the flag its comment names). buildFolds appends rows to Arrow builders, and
// values gives a row as the list of values DuckDB's appender takes. Until the thirtieth
// session a row was that list, each string, time and number in it boxed: a finished run's fold
// made 76 allocations where it now makes 32 (BenchmarkFold; 17 of the difference are the six
// signatures computed together, metrics.Signatures), and row was the function of ingestion's
// own code that allocated most (docs/benchmarks.md). A row can no longer hold a value of the
// wrong type for its column.
type foldRow struct {
	study, run           string
	attempt              int32
	sourceKind, sourceID string
	// started: the history has a run.started. Without one, task through simulated, started_at,
	// elapsed_ms and input_key are NULL.
	started                bool
	task, model, condition string
	instance               string // "" is NULL
	inputIndex, seedIndex  int32
	seed                   int64
	hasSeed                bool // seed is NULL without
	components             string
	simulated              bool

	status                string
	success               bool
	errText               string // error; "" is NULL
	startedAt, finishedAt time.Time
	latencyMS, elapsedMS  float64

	promptTokens, completionTokens, tokens int64
	modelCalls, toolCalls, retries         int32
	planReprompts, rejectedToolCalls       int32
	validationsFailed                      int32
	escalated                              bool

	plan, states, tools, calls, output string
	// sig_plan, sig_states, sig_tools, sig_calls, sig_output and sig_trace.
	sigs [6][]byte

	events                int32
	foldError, checkError string // "" is NULL
	finishedStatus        string
	hasCause              bool // cause_kind, cause_permanent and cause are NULL without
	causeKind             string
	causePermanent        bool
	cause                 string
	inputKey              string // "" is NULL
}

// values is r as the list of its columns' values that DuckDB's appender takes, nil for NULL.
func (r *foldRow) values() []driver.Value {
	orNull := func(ok bool, v driver.Value) driver.Value {
		if !ok {
			return nil
		}
		return v
	}
	s := r.started
	return []driver.Value{
		r.study, r.run, r.attempt, r.sourceKind, r.sourceID,
		orNull(s, r.task), orNull(s, r.model), orNull(s, r.condition), nullString(r.instance),
		orNull(s, r.inputIndex), orNull(s, r.seedIndex), orNull(r.hasSeed, r.seed),
		orNull(s, r.components), orNull(s, r.simulated),
		r.status, r.success, nullString(r.errText),
		orNull(s, r.startedAt), r.finishedAt, r.latencyMS, orNull(s, r.elapsedMS),
		r.promptTokens, r.completionTokens, r.tokens,
		r.modelCalls, r.toolCalls, r.retries, r.planReprompts, r.rejectedToolCalls, r.validationsFailed,
		r.escalated,
		r.plan, r.states, r.tools, r.calls, r.output,
		r.sigs[0], r.sigs[1], r.sigs[2], r.sigs[3], r.sigs[4], r.sigs[5],
		r.events, nullString(r.foldError), nullString(r.checkError),
		r.finishedStatus, orNull(r.hasCause, r.causeKind), orNull(r.hasCause, r.causePermanent),
		orNull(r.hasCause, r.cause), nullString(r.inputKey),
	}
}

// micro truncates t to DuckDB's microsecond precision, so that a row computed from events in
// memory equals one computed from events read back from DuckDB.
func micro(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

// foldHistory folds an attempt's sorted history into its run_folds row.
func foldHistory(k attemptKey, h []histEvent) (*foldRow, bool) {
	var f foldState
	for i := range h {
		f.add(&h[i].env)
	}
	return f.row(k)
}

// foldState is an attempt's history folded one event at a time, in the history's order: what
// its run_folds row is made of, kept instead of the events. Fed a whole sorted history it gives
// the row foldHistory gives (it is how foldHistory folds); the ingester feeds it each event of
// an open attempt as the history's next one arrives, so that it holds a run's compact state
// rather than its decoded events.
type foldState struct {
	run events.Run
	err error // the fold's first error, as events.Fold reports it; no event is applied after it
	n   int   // events added
	src events.Source

	started               *events.RunStarted // the first run.started
	finished              *events.RunFinished
	startedAt, finishedAt time.Time // truncated to microseconds
}

// add folds the history's next event.
func (f *foldState) add(e *events.Envelope) {
	if f.n == 0 {
		f.src = e.Source
	}
	if f.err == nil {
		if err := f.run.Apply(e); err != nil {
			f.err = fmt.Errorf("event %d: %w", f.n, err) // events.Fold's error
		}
	}
	f.n++
	switch p := e.Payload.(type) {
	case events.RunStarted:
		if f.started == nil {
			f.started, f.startedAt = &p, micro(e.Time)
		}
	case events.RunFinished:
		f.finished, f.finishedAt = &p, micro(e.Time) // the last one wins, as in the fold's refusal
	}
}

// row returns the attempt's run_folds row, or nil while no run.finished has been added, and
// whether the fold refused the history.
func (f *foldState) row(k attemptKey) (*foldRow, bool) {
	started, finished := f.started, f.finished
	if finished == nil {
		return nil, false // nothing to write until run.finished is stored
	}
	r, ferr := &f.run, f.err
	if r.Finished != nil {
		finished = r.Finished
	}
	row := &foldRow{
		study: k.study, run: k.run, attempt: int32(k.attempt),
		sourceKind: string(f.src.Kind), sourceID: f.src.ID,
		finishedAt: f.finishedAt, latencyMS: finished.Totals.LatencyMS,
	}
	if started != nil {
		row.started = true
		row.task, row.model, row.condition = started.Task, started.Model, started.Condition
		row.instance = started.Instance
		row.inputIndex, row.seedIndex = int32(started.InputIndex), int32(started.SeedIndex)
		if started.Seed != nil {
			row.seed, row.hasSeed = *started.Seed, true
		}
		c := started.Components
		if c == nil {
			c = []string{}
		}
		row.components, row.simulated = jsonStrings(c), started.Simulated
		row.startedAt = f.startedAt
		row.elapsedMS = float64(f.finishedAt.Sub(f.startedAt).Microseconds()) / 1000
		row.inputKey = started.ResolvedInputKey()
	}

	calls := make([]metrics.Call, len(r.Calls))
	for i, c := range r.Calls {
		calls[i] = metrics.Call{Tool: c.Tool, Args: string(c.Args)}
	}
	row.output = NoOutput
	if len(finished.Output) > 0 {
		row.output = string(finished.Output)
	}
	mr := metrics.Run{Plan: r.Plan, States: r.States, Tools: r.Tools, Calls: calls, Output: row.output}

	foldErrors := false
	row.status, row.success = finished.Status, finished.Success
	if ferr != nil {
		row.foldError, foldErrors = ferr.Error(), true
		// A history with a gap or an event the fold refuses is not the run: it stays
		// incomplete, out of every metric, until the missing events arrive and it folds.
		row.status, row.success = StatusIncomplete, false
	} else {
		row.checkError = checkTotals(finished.Totals, r)
	}
	row.errText = finished.Error
	if c := finished.Cause; c.Kind != "" {
		row.hasCause, row.causeKind, row.causePermanent, row.cause = true, c.Kind, c.Permanent, c.Detail
	}
	row.promptTokens, row.completionTokens = r.PromptTokens, r.CompletionTokens
	row.tokens = r.PromptTokens + r.CompletionTokens
	row.modelCalls, row.toolCalls, row.retries = int32(r.ModelCalls), int32(len(r.Tools)), int32(r.Retries)
	row.planReprompts, row.rejectedToolCalls = int32(r.PlanReprompts), int32(r.RejectedToolCalls)
	row.validationsFailed = int32(r.ValidationsFailed)
	row.escalated = r.Escalated || finished.Status == events.StatusEscalated
	row.plan, row.states, row.tools = r.Plan, jsonStrings(r.States), jsonStrings(r.Tools)
	row.calls = string(events.CanonicalCalls(r.Calls))
	row.sigs = sigBytes(metrics.Signatures(mr))
	row.events, row.finishedStatus = int32(f.n), finished.Status
	return row, foldErrors
}

// sigBytes gives the row's six signatures as run_fold_rows stores them, their bytes (run_folds
// shows them in hex), in one allocation rather than one each.
func sigBytes(sigs metrics.RunSignatures) [6][]byte {
	all := make([]byte, 0, 6*len(sigs.Plan))
	var out [6][]byte
	for i, s := range [6]metrics.Signature{sigs.Plan, sigs.States, sigs.Tools, sigs.Calls, sigs.Output, sigs.Trace} {
		all = append(all, s[:]...)
		out[i] = all[i*len(s) : (i+1)*len(s) : (i+1)*len(s)]
	}
	return out
}

// jsonStrings is a list as run_fold_rows stores it: a JSON array of strings (nil: "[]"), which
// the view run_folds reads back as the VARCHAR[] it shows. A string that is not valid UTF-8,
// which a DuckDB VARCHAR cannot hold, has each run of invalid bytes replaced by U+FFFD.
func jsonStrings(list []string) string {
	n := 2
	for _, s := range list {
		n += len(s) + 3
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, s := range list {
		if i > 0 {
			out = append(out, ',')
		}
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		out = appendJSONString(out, s)
	}
	return string(append(out, ']'))
}

// appendJSONString appends s as a JSON string: '"' and '\\' escaped, control characters as
// \u00XX (or their short escapes), every other byte as it is.
func appendJSONString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"' || ch == '\\':
			out = append(out, '\\', ch)
		case ch >= 0x20:
			out = append(out, ch)
		case ch == '\n':
			out = append(out, '\\', 'n')
		case ch == '\t':
			out = append(out, '\\', 't')
		case ch == '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[ch>>4], hexDigits[ch&15])
		}
	}
	return append(out, '"')
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// checkTotals compares run.finished's totals with what the fold counted from the events.
func checkTotals(t events.Totals, r *events.Run) string {
	var diffs []string
	check := func(name string, reported, folded int64) {
		if reported != folded {
			diffs = append(diffs, fmt.Sprintf("%s: reported %d, events say %d", name, reported, folded))
		}
	}
	check("prompt_tokens", t.PromptTokens, r.PromptTokens)
	check("completion_tokens", t.CompletionTokens, r.CompletionTokens)
	check("model_calls", int64(t.ModelCalls), int64(r.ModelCalls))
	check("tool_calls", int64(t.ToolCalls), int64(len(r.Tools)))
	check("retries", int64(t.Retries), int64(r.Retries))
	check("plan_reprompts", int64(t.PlanReprompts), int64(r.PlanReprompts))
	check("rejected_tool_calls", int64(t.RejectedToolCalls), int64(r.RejectedToolCalls))
	return strings.Join(diffs, "; ")
}
