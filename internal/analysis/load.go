package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// studyRow is the row of analysis_study.
type studyRow struct {
	Study
	lastEventUS *int64
}

var studyCols = []string{"study", "name", "source_kind", "paired", "expected_runs", "last_event_us"}

func loadStudy(ctx context.Context, q Querier, study string) (*studyRow, error) {
	var out *studyRow
	err := q.Query(ctx, queries.AnalysisStudy, []any{study}, func(vals []any) error {
		r := row{vals: vals, cols: studyCols}
		s := &studyRow{Study: Study{ID: r.str(0), Name: r.str(1), SourceKind: r.str(2), Paired: r.bool(3), ExpectedRuns: r.optInt(4)}}
		s.lastEventUS = r.optInt(5)
		out = s
		return r.err
	})
	if err != nil {
		return nil, err
	}
	if out == nil || out.lastEventUS == nil {
		return nil, fmt.Errorf("%w: %q (no event names it; see analyzer status)", ErrNoStudy, study)
	}
	return out, nil
}

// cellRow is a row of analysis_cells.
type cellRow struct {
	key  CellKey
	data CellData
	// distinct counts by SQL signature grouping, checked against package metrics'.
	distinctTraces, distinctOutputs, distinctTools int64
	firstStartedUS                                 *int64
}

var cellCols = []string{"task", "model", "condition", "expected_runs", "runs", "counted_runs",
	"errored_runs", "aborted_runs",
	"superseded_attempts", "superseded_finished", "incomplete_runs", "running_attempts", "fold_errors",
	"check_errors", "distinct_traces", "distinct_outputs", "distinct_tool_sequences", "superseded_tokens",
	"superseded_retries", "first_started_us", "last_finished_us"}

func loadCells(ctx context.Context, q Querier, study string) ([]cellRow, error) {
	var out []cellRow
	err := q.Query(ctx, queries.AnalysisCells, []any{study}, func(vals []any) error {
		r := row{vals: vals, cols: cellCols}
		c := cellRow{key: CellKey{Task: r.str(0), Model: r.str(1), Condition: r.str(2)}}
		c.data = CellData{
			ExpectedRuns: r.optInt(3), Runs: r.int(4), CountedRuns: r.int(5),
			ErroredRuns: r.int(6), AbortedRuns: r.int(7), Causes: []Cause{},
			SupersededAttempts: r.int(8), SupersededFinished: r.int(9), IncompleteRuns: r.int(10),
			RunningAttempts: r.int(11), FoldErrors: r.int(12), CheckErrors: r.int(13),
			SupersededTokens: r.int(17), SupersededRetries: r.int(18),
		}
		c.distinctTraces, c.distinctOutputs, c.distinctTools = r.int(14), r.int(15), r.int(16)
		c.firstStartedUS = r.optInt(19)
		c.data.FirstStarted = timeText(c.firstStartedUS)
		c.data.LastFinished = timeText(r.optInt(20))
		out = append(out, c)
		return r.err
	})
	slices.SortFunc(out, func(a, b cellRow) int { return compareKeys(a.key, b.key) })
	return out, err
}

var causeCols = []string{"task", "model", "condition", "cause_kind", "permanent", "cause", "runs"}

// loadCauses reads the causes of the study's errored runs (analysis_causes) into their cells.
func loadCauses(ctx context.Context, q Querier, study string, cells []cellRow) error {
	byKey := map[CellKey]*CellData{}
	for i := range cells {
		byKey[cells[i].key] = &cells[i].data
	}
	return q.Query(ctx, queries.AnalysisCauses, []any{study}, func(vals []any) error {
		r := row{vals: vals, cols: causeCols}
		k := CellKey{Task: r.str(0), Model: r.str(1), Condition: r.str(2)}
		if d := byKey[k]; d != nil {
			d.Causes = append(d.Causes, Cause{Kind: r.str(3), Permanent: r.bool(4), Detail: r.str(5), Runs: r.int(6)})
		}
		return r.err
	})
}

// settingCols are the columns of a run's setting (runSetting) in the report statements whose
// runs are paired across conditions (report_coding, report_context).
var settingCols = [...]string{"task", "model", "condition", "input_index", "seed_index", "components", "context_tier", "context_budget"}

// loadPairedRuns runs stmt for study, a statement returning one run per row in columns cols,
// settingCols among them wherever the statement puts them, and makes a run of each row:
// decode reads the section's own columns of c and is given the run's setting.
func loadPairedRuns[R any](ctx context.Context, q Querier, stmt queries.Statement, study string, cols []string,
	decode func(c *row, s runSetting) R) ([]R, error) {
	var at [len(settingCols)]int
	for i, name := range settingCols {
		if at[i] = slices.Index(cols, name); at[i] < 0 {
			return nil, fmt.Errorf("analysis: %s: no column %s for pairing runs", stmt.Name, name)
		}
	}
	var runs []R
	err := q.Query(ctx, stmt, []any{study}, func(v []any) error {
		c := row{vals: v, cols: cols}
		s := runSetting{CellKey: CellKey{Task: c.str(at[0]), Model: c.str(at[1]), Condition: c.str(at[2])},
			input: c.int(at[3]), seed: c.int(at[4]), components: c.strings(at[5]), tier: c.str(at[6]), budget: c.int(at[7])}
		runs = append(runs, decode(&c, s))
		return c.err
	})
	return runs, err
}

func compareKeys(a, b CellKey) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}

// timeText renders microseconds since the epoch as RFC 3339 UTC; nil stays nil.
func timeText(us *int64) *string {
	if us == nil {
		return nil
	}
	s := time.UnixMicro(*us).UTC().Format(time.RFC3339Nano)
	return &s
}

// selection restricts the runs loaded: a cell filter and a started_at window.
type selection struct {
	study                  string
	task, model, condition string // "" for any
	fromUS, toUS           *int64 // nil for unbounded
}

func (s selection) args() []any {
	opt := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	us := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	return []any{s.study, opt(s.task), opt(s.model), opt(s.condition), us(s.fromUS), us(s.toUS)}
}

// content is a distinct trace of a cell (analysis_traces), shared by the runs that have it.
type content struct {
	sigTrace, sigTools string // for messages
	plan, output       string
	states             []string
	tools              []string
	calls              []metrics.Call
	runs               int64 // multiplicity according to SQL
	seen               int64 // runs attached
}

// traceKey names a trace of a cell by analysis_traces' trace_key, a hash of its signatures.
type traceKey struct {
	cell CellKey
	key  int64
}

var traceCols = []string{"task", "model", "condition", "sig_trace", "sig_tools", "plan", "states", "tools", "calls", "output",
	"runs", "trace_key"}

var runCols = []string{"task", "model", "condition", "run", "attempt", "status", "success", "tokens", "latency_ms",
	"retries", "plan_reprompts", "rejected_tool_calls", "escalated", "input_index", "seed_index", "started_us",
	"trace_key", "input_key"}

// loadRuns returns the counted runs of the selection by cell, each cell's runs ordered by run
// id. Run contents come from the signature grouping (analysis_traces) and are shared by the
// runs of a group; paired studies get PairKey "input=I/seed=S".
//
// traces is a lower bound of the distinct traces, if known (0 otherwise; analysis_cells'
// distinct_traces counts distinct sig_trace, a trace being a distinct (sig_trace, sig_tools)):
// the map of their contents is made for them rather than grown (at 900,000 traces its growth
// took 1.2 s of CPU).
func loadRuns(ctx context.Context, q Querier, sel selection, paired bool, traces int64) (map[CellKey][]metrics.Run, error) {
	t := &traceLoader{contents: make(map[traceKey]*content, max(traces, 0)), callsMemo: map[string][]metrics.Call{}}
	if err := queryEither(ctx, q, queries.AnalysisTraces, sel.args(), t.addRow, t.addBatch); err != nil {
		return nil, err
	}
	l := &runLoader{paired: paired}
	l.init(t.contents)
	if err := queryEither(ctx, q, queries.AnalysisRuns, sel.args(), l.addRow, l.addBatch); err != nil {
		return nil, err
	}
	return l.finish()
}

// traceLoader keeps the contents of analysis_traces' rows, the distinct traces of each cell.
//
// Traces that differ in their output alone (the usual case of an agent's free text) have the
// same calls: each distinct calls text is decoded once and its calls shared, as a trace's are by
// its runs (nothing changes a run's calls). With a baseline cell of about 900,000 traces that
// differ in their output, decoding every trace's calls took 8 of 139 s of CPU in a profile of
// BenchmarkComputeMillion (distinct=many), and Compute took 44 s without the memo and 33-34 s
// with it. The memo keeps at most maxCallsMemo texts, so that traces whose calls all differ
// hold little more than before.
type traceLoader struct {
	contents  map[traceKey]*content
	callsMemo map[string][]metrics.Call
}

// traceValues are one row of analysis_traces, as both readers of it give it to add; views as in
// runValues.
type traceValues struct {
	key                traceKey
	sigTrace, sigTools string
	plan, calls        string
	output             string
	states, tools      []string // the loader's to keep
	runs               int64
	views              bool
}

// add keeps the content of v's trace.
func (t *traceLoader) add(v *traceValues) error {
	c := &content{sigTrace: v.sigTrace, sigTools: v.sigTools, plan: v.plan, states: v.states, tools: v.tools,
		output: v.output, runs: v.runs}
	k := v.key
	if v.views {
		c.sigTrace, c.sigTools = strings.Clone(c.sigTrace), strings.Clone(c.sigTools)
		c.plan, c.output = strings.Clone(c.plan), strings.Clone(c.output)
		k.cell = CellKey{strings.Clone(k.cell.Task), strings.Clone(k.cell.Model), strings.Clone(k.cell.Condition)}
	}
	if o := t.contents[k]; o != nil {
		return fmt.Errorf("analysis: traces %s/%s and %s/%s of %s have the same trace key %d (a hash collision): "+
			"this study cannot be analysed until the key is widened; please report it", o.sigTrace, o.sigTools, c.sigTrace, c.sigTools, k.cell, k.key)
	}
	calls, ok := t.callsMemo[v.calls]
	if !ok {
		var err error
		if calls, err = decodeCalls(v.calls); err != nil {
			return fmt.Errorf("analysis: calls of trace %s in %s: %w", c.sigTrace, k.cell, err)
		}
		if len(t.callsMemo) < maxCallsMemo {
			t.callsMemo[strings.Clone(v.calls)] = calls
		}
	}
	c.calls = calls
	t.contents[k] = c
	return nil
}

// addRow adds a row of analysis_traces as a Querier gives it.
func (t *traceLoader) addRow(vals []any) error {
	r := row{vals: vals, cols: traceCols}
	v := traceValues{
		key:      traceKey{CellKey{r.str(0), r.str(1), r.str(2)}, r.int(11)},
		sigTrace: r.str(3), sigTools: r.str(4), plan: r.str(5), states: r.strings(6), tools: r.strings(7), calls: r.str(8), output: r.str(9), runs: r.int(10),
	}
	if r.err != nil {
		return r.err
	}
	return t.add(&v)
}

// runLoader makes the runs of analysis_runs' rows, given the contents of their traces.
type runLoader struct {
	contents map[traceKey]*content
	paired   bool
	counted  map[CellKey]int // runs of each cell, by its trace groups
	out      map[CellKey][]metrics.Run
	curKey   CellKey
	cur      []metrics.Run
	started  bool
	pair     []byte
}

// init gives the loader the contents of the traces its runs have.
func (l *runLoader) init(contents map[traceKey]*content) {
	l.contents, l.counted, l.out = contents, map[CellKey]int{}, map[CellKey][]metrics.Run{}
	for k, c := range contents {
		l.counted[k.cell] += int(max(c.runs, 0))
	}
}

// runValues are one row of analysis_runs, as both readers of it (rows and record batches) give
// it to add.
type runValues struct {
	cell                       CellKey
	id                         string
	trace                      int64 // trace_key
	success, escalated         bool
	tokens, retries, reprompts int64
	rejected, input, seed      int64
	latencyMS                  float64
	inputKey                   string
	// views: the strings are views of memory freed after the call (an Arrow batch's buffers,
	// which DuckDB owns), so that add copies what it keeps.
	views bool
}

// add appends the run of v to its cell.
//
// Each cell's slice is made for the runs its groups count, so that appending a million runs
// does not copy them again and again as the slice grows: at two cells of 10⁶ runs, loading the
// cells and runs took 17.8 s with that growth and 12.0 without it (BenchmarkComputeMillion,
// docs/benchmarks.md). cur is the slice of the cell of the row before (the statement orders by
// cell; any order gives the same result).
func (l *runLoader) add(v *runValues) error {
	if !l.started || v.cell != l.curKey {
		l.flush()
		key := v.cell
		if v.views {
			key = CellKey{strings.Clone(key.Task), strings.Clone(key.Model), strings.Clone(key.Condition)}
		}
		l.curKey, l.cur, l.started = key, l.out[key], true
		if l.cur == nil {
			l.cur = make([]metrics.Run, 0, l.counted[key])
		}
	}
	c := l.contents[traceKey{v.cell, v.trace}]
	if c == nil {
		return fmt.Errorf("%w: run %s of %s has a trace the signature grouping did not return", ErrChanged, v.id, v.cell)
	}
	c.seen++
	run := metrics.Run{
		ID: v.id, Plan: c.plan, States: c.states, Tools: c.tools, Calls: c.calls, Output: c.output,
		Success: v.success, Tokens: v.tokens, LatencyMS: v.latencyMS,
		Retries: int(v.retries), PlanReprompts: int(v.reprompts), RejectedToolCalls: int(v.rejected),
		Escalated: v.escalated, InputKey: v.inputKey,
	}
	if v.views {
		run.ID, run.InputKey = strings.Clone(v.id), strings.Clone(v.inputKey)
	}
	if l.paired {
		l.pair = strconv.AppendInt(append(l.pair[:0], "input="...), v.input, 10)
		l.pair = strconv.AppendInt(append(l.pair, "/seed="...), v.seed, 10)
		run.PairKey = string(l.pair)
	}
	l.cur = append(l.cur, run)
	return nil
}

func (l *runLoader) flush() {
	if l.started {
		l.out[l.curKey] = l.cur
	}
}

// addRow adds a row of analysis_runs as a Querier gives it.
func (l *runLoader) addRow(vals []any) error {
	r := row{vals: vals, cols: runCols}
	v := runValues{
		cell: CellKey{r.str(0), r.str(1), r.str(2)}, id: r.str(3),
		success: r.bool(6), tokens: r.int(7), latencyMS: r.float(8),
		retries: r.int(9), reprompts: r.int(10), rejected: r.int(11), escalated: r.bool(12),
		input: r.int(13), seed: r.int(14), trace: r.int(16), inputKey: r.str(17),
	}
	if r.err != nil {
		return r.err
	}
	return l.add(&v)
}

// finish checks that every trace group got its runs and orders each cell's runs by run id.
func (l *runLoader) finish() (map[CellKey][]metrics.Run, error) {
	l.flush()
	for k, c := range l.contents {
		if c.seen != c.runs {
			return nil, fmt.Errorf("%w: trace %s of %s: %d runs grouped, %d loaded", ErrChanged, c.sigTrace, k.cell, c.runs, c.seen)
		}
	}
	// The statement orders by run id; sorting again makes the order a property of this code,
	// not of a transport that may reorder rows.
	for _, runs := range l.out {
		slices.SortFunc(runs, func(a, b metrics.Run) int { return strings.Compare(a.ID, b.ID) })
	}
	return l.out, nil
}

// maxCallsMemo bounds the distinct calls texts loadRuns keeps decoded for the traces after.
const maxCallsMemo = 1 << 16

// decodeCalls parses run_folds.calls, the canonical JSON array of {"args":…,"tool":…}. The
// arguments keep their bytes, which are canonical because the array is.
func decodeCalls(s string) ([]metrics.Call, error) {
	var raw []struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	calls := make([]metrics.Call, len(raw))
	for i, c := range raw {
		calls[i] = metrics.Call{Tool: c.Tool, Args: string(c.Args)}
	}
	return calls, nil
}
