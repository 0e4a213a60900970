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

// foldRow is one row of run_fold_rows (run_folds as stored), in column order.
type foldRow []driver.Value

// micro truncates t to DuckDB's microsecond precision, so that a row computed from events in
// memory equals one computed from events read back from DuckDB.
func micro(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

// foldHistory folds an attempt's sorted history into its run_folds row.
func foldHistory(k attemptKey, h []histEvent) (foldRow, bool) {
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
func (f *foldState) row(k attemptKey) (foldRow, bool) {
	started, finished := f.started, f.finished
	var startedAt, finishedAt any
	st, ft := f.startedAt, f.finishedAt
	if started != nil {
		startedAt = st
	}
	if finished == nil {
		return nil, false // nothing to write until run.finished is stored
	}
	finishedAt = ft
	r, ferr := &f.run, f.err
	if r.Finished != nil {
		finished = r.Finished
	}

	var task, model, condition, instance, inputIndex, seedIndex, seed, components, simulated any
	if started != nil {
		task, model, condition = started.Task, started.Model, started.Condition
		instance = nullString(started.Instance)
		inputIndex, seedIndex = int32(started.InputIndex), int32(started.SeedIndex)
		if started.Seed != nil {
			seed = *started.Seed
		}
		c := started.Components
		if c == nil {
			c = []string{}
		}
		components, simulated = jsonStrings(c), started.Simulated
	}
	var elapsed any
	if started != nil {
		elapsed = float64(ft.Sub(st).Microseconds()) / 1000
	}

	states, tools := r.States, r.Tools
	calls := make([]metrics.Call, len(r.Calls))
	for i, c := range r.Calls {
		calls[i] = metrics.Call{Tool: c.Tool, Args: string(c.Args)}
	}
	callsJSON := events.CanonicalCalls(r.Calls)
	output := NoOutput
	if len(finished.Output) > 0 {
		output = string(finished.Output)
	}
	mr := metrics.Run{Plan: r.Plan, States: states, Tools: tools, Calls: calls, Output: output}

	var foldErr, checkErr any
	foldErrors := false
	status, success := finished.Status, finished.Success
	if ferr != nil {
		foldErr, foldErrors = ferr.Error(), true
		// A history with a gap or an event the fold refuses is not the run: it stays
		// incomplete, out of every metric, until the missing events arrive and it folds.
		status, success = StatusIncomplete, false
	} else if msg := checkTotals(finished.Totals, r); msg != "" {
		checkErr = msg
	}
	var causeKind, causePermanent, cause, inputKey any
	if c := finished.Cause; c.Kind != "" {
		causeKind, causePermanent, cause = c.Kind, c.Permanent, c.Detail
	}
	if started != nil {
		inputKey = nullString(started.ResolvedInputKey())
	}
	src := f.src
	sigs := sigBytes(metrics.PlanSignature(mr), metrics.StatesSignature(mr), metrics.ToolsSignature(mr),
		metrics.CallsSignature(mr), metrics.OutputSignature(mr), metrics.TraceSignature(mr))
	row := foldRow{
		k.study, k.run, int32(k.attempt), string(src.Kind), src.ID,
		task, model, condition, instance, inputIndex, seedIndex, seed, components, simulated,
		status, success, nullString(finished.Error),
		startedAt, finishedAt, finished.Totals.LatencyMS, elapsed,
		r.PromptTokens, r.CompletionTokens, r.PromptTokens + r.CompletionTokens,
		int32(r.ModelCalls), int32(len(r.Tools)), int32(r.Retries), int32(r.PlanReprompts),
		int32(r.RejectedToolCalls), int32(r.ValidationsFailed),
		r.Escalated || finished.Status == events.StatusEscalated,
		r.Plan, jsonStrings(states), jsonStrings(tools), string(callsJSON), output,
		sigs[0], sigs[1], sigs[2], sigs[3], sigs[4], sigs[5],
		int32(f.n), foldErr, checkErr,
		finished.Status, causeKind, causePermanent, cause, inputKey,
	}
	return row, foldErrors
}

// sigBytes gives the row's six signatures as run_fold_rows stores them, their bytes (run_folds
// shows them in hex), in one allocation rather than one each.
func sigBytes(plan, states, tools, calls, output, trace metrics.Signature) [6][]byte {
	all := make([]byte, 0, 6*len(plan))
	var out [6][]byte
	for i, s := range [6]metrics.Signature{plan, states, tools, calls, output, trace} {
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
