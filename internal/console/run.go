package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/queries"
)

// attempt is one attempt of a run as the runs view has it.
type attempt struct {
	Attempt                                   int64
	Last                                      bool
	Task, Model, Condition                    string
	Components                                []string
	Simulated                                 bool
	Seed                                      string
	Status                                    string
	Success                                   bool
	Error                                     string
	Started, Finished                         string
	Latency                                   string
	PromptTokens, CompletionTokens, Tokens    int64
	ModelCalls, ToolCalls, Retries, Reprompts int64
	Rejected                                  int64
	Trace                                     trace
	Folded                                    bool // run.finished arrived: the fold columns are set
	Sig, FoldError, CheckError                string
	Events                                    int64
	Calls                                     []call
	States                                    []string
	OutputText                                string
	HasOutput                                 bool
	Key                                       analysis.CellKey
}

func (c *Console) readAttempts(ctx context.Context, study, run string) ([]attempt, error) {
	rows, _, err := c.rd.query(ctx, queries.ConsoleRun, study, run)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: study %q has no run %q", errNotFound, study, run)
	}
	out := make([]attempt, 0, len(rows))
	for _, r := range rows {
		a := attempt{Attempt: integer(r[0]), Last: boolean(r[1]), Task: str(r[2]), Model: str(r[3]), Condition: str(r[4]),
			Components: stringList(r[5]), Simulated: boolean(r[6]), Status: str(r[8]), Success: boolean(r[9]), Error: str(r[10]),
			Started: timeText(r[11]), Finished: timeText(r[12]), PromptTokens: integer(r[14]), CompletionTokens: integer(r[15]),
			Tokens: integer(r[16]), ModelCalls: integer(r[17]), ToolCalls: integer(r[18]), Retries: integer(r[19]),
			Reprompts: integer(r[20]), Rejected: integer(r[21]), Sig: str(r[27]), Events: integer(r[28]),
			FoldError: str(r[29]), CheckError: str(r[30])}
		if r[7] != nil {
			a.Seed = strconv.FormatInt(integer(r[7]), 10)
		}
		if l, ok := float(r[13]); ok {
			a.Latency = strconv.FormatFloat(l, 'f', 0, 64) + " ms"
		}
		a.Key = analysis.CellKey{Task: a.Task, Model: a.Model, Condition: a.Condition}
		a.Folded = r[22] != nil
		if a.Folded {
			cs, err := parseCalls(str(r[25]))
			if err != nil {
				return nil, err
			}
			a.Trace = trace{Plan: str(r[22]), States: stringList(r[23]), Calls: cs}
			if r[26] != nil {
				o := str(r[26])
				a.Trace.Output, a.OutputText, a.HasOutput = &o, o, true
			}
			a.Calls, a.States = cs, a.Trace.States
		}
		out = append(out, a)
	}
	return out, nil
}

// pickAttempt returns the attempt asked for ("" for the run's latest).
func pickAttempt(as []attempt, want string) (attempt, error) {
	if want == "" {
		return as[len(as)-1], nil
	}
	n, err := strconv.ParseInt(want, 10, 64)
	if err != nil {
		return attempt{}, fmt.Errorf("%w: attempt %q is not a number", errBadRequest, want)
	}
	for _, a := range as {
		if a.Attempt == n {
			return a, nil
		}
	}
	return attempt{}, fmt.Errorf("%w: no attempt %d", errNotFound, n)
}

// entry is one event of the timeline.
type entry struct {
	Seq      int64
	At       string // time since the attempt's first event
	Type     string
	Class    string // the event's family: run, plan, state, model, tool, validation, retry, escalation
	Headline string
	Fields   []field
	Raw      string // the whole event as indented JSON
	Bad      bool   // a rejection, an invalid output, an escalation, a failed call
}

type field struct {
	Key, Value string
	Block      bool // JSON or long text, shown as a block
}

// bar is one span of the waterfall (a model call or a tool execution), in thousandths of the
// attempt's duration (the SVG's viewBox is 1000 wide).
type bar struct {
	Y, X, W      int
	Label, Class string
	Seq          int64
	TextX, TextY int
	Anchor       string // the label's text-anchor: start or end
	Inside       bool   // the label is drawn on the bar
}

type runView struct {
	Study, Run   string
	A            attempt
	Attempts     []attempt
	Entries      []entry
	Bars         []bar
	WaterHeight  int
	Duration     string
	CellLink     string
	StudyLink    string
	Others       []runItem // the other runs of the cell, for Compare
	OtherDefault string
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	study, run := r.PathValue("study"), r.PathValue("run")
	as, err := c.readAttempts(ctx, study, run)
	if err != nil {
		return err
	}
	a, err := pickAttempt(as, r.URL.Query().Get("attempt"))
	if err != nil {
		return err
	}
	v := runView{Study: study, Run: run, A: a, Attempts: as, CellLink: cellLink(study, a.Key), StudyLink: "/studies/" + pathEsc(study)}
	rows, cut, err := c.rd.query(ctx, queries.ConsoleRunEvents, study, run, a.Attempt)
	if err != nil {
		return err
	}
	if cut {
		return fmt.Errorf("console: run %s has more than %d events; read them on the SQL page", run, pageRows)
	}
	timeline(&v, rows)
	others, _, err := c.rd.query(ctx, queries.ConsoleCellRuns, study, a.Task, a.Model, a.Condition, nil)
	if err != nil {
		return err
	}
	for _, o := range others {
		if str(o[0]) == run {
			continue
		}
		it := runItem{Run: str(o[0]), Status: str(o[2])}
		if short := str(o[6]); short != "" {
			it.Error = "trace " + short[:min(10, len(short))]
		}
		if v.OtherDefault == "" && str(o[6]) != a.Sig {
			v.OtherDefault = it.Run
		}
		v.Others = append(v.Others, it)
	}
	c.render(w, r, "run", http.StatusOK, pageData{Title: "Run " + run, Nav: "studies", Data: v})
	return nil
}

// timeline builds the entries and the waterfall of an attempt's events (console_run_events
// rows: seq, time_us, type, schema_version, id, source_kind, source_id, payload).
func timeline(v *runView, rows [][]any) {
	if len(rows) == 0 {
		return
	}
	t0 := integer(rows[0][1])
	end := integer(rows[len(rows)-1][1]) - t0
	type span struct {
		from, to int64 // µs since the attempt's first event; a call began before its event
		label    string
		class    string
		seq      int64
	}
	var spans []span
	for _, row := range rows {
		seq, at, typ := integer(row[0]), integer(row[1])-t0, str(row[2])
		payload := str(row[7])
		var p map[string]any
		d := json.NewDecoder(strings.NewReader(payload))
		d.UseNumber()
		_ = d.Decode(&p)
		e := entry{Seq: seq, At: fmt.Sprintf("+%.1f ms", float64(at)/1000), Type: typ, Class: family(typ)}
		e.Headline, e.Bad = headline(typ, p)
		e.Fields = fields(p)
		e.Raw = rawEvent(row, payload)
		v.Entries = append(v.Entries, e)
		switch typ {
		case "model.called":
			lat, _ := num(p["latency_ms"])
			spans = append(spans, span{at - int64(lat*1000), at, fmt.Sprintf("#%d %s %s · %s ms · %s+%s tokens", seq, s(p["model"]), s(p["purpose"]),
				trimNum(p["latency_ms"]), s(p["prompt_tokens"]), s(p["completion_tokens"])), "model", seq})
		case "tool.returned":
			dur, _ := num(p["duration_ms"])
			spans = append(spans, span{at - int64(dur*1000), at, fmt.Sprintf("#%d %s · %s ms", seq, s(p["tool"]), trimNum(p["duration_ms"])), "tool", seq})
		}
	}
	// The chart begins at the earliest call's start (a first model call began before the
	// attempt's first event was written) and ends at the last event.
	first := int64(0)
	for _, sp := range spans {
		first = min(first, sp.from)
	}
	total := max(end-first, 1)
	v.Duration = fmt.Sprintf("%.1f ms", float64(end-first)/1000)
	const rowH = 16
	for i, sp := range spans {
		x := int((sp.from - first) * 1000 / total)
		wd := max(int((sp.to-sp.from)*1000/total), 2)
		b := bar{Y: i * rowH, X: x, W: wd, Label: sp.label, Class: sp.class, Seq: sp.seq, TextY: i*rowH + 11}
		// The label goes after the bar, or before it when the bar ends late; a bar spanning
		// most of the chart carries its label inside (Inside: drawn light on the bar).
		b.TextX, b.Anchor = x+wd+4, "start"
		switch {
		case b.TextX <= 600:
		case x >= 400:
			b.TextX, b.Anchor = x-4, "end"
		default:
			b.TextX, b.Inside = x+4, true
		}
		v.Bars = append(v.Bars, b)
	}
	v.WaterHeight = len(spans) * rowH
}

func family(typ string) string {
	switch {
	case strings.HasPrefix(typ, "run.escalated"):
		return "escalation"
	case strings.HasPrefix(typ, "run."):
		return "run"
	case strings.HasPrefix(typ, "plan."):
		return "plan"
	case strings.HasPrefix(typ, "state."):
		return "state"
	case strings.HasPrefix(typ, "model."):
		return "model"
	case strings.HasPrefix(typ, "tool."):
		return "tool"
	case strings.HasPrefix(typ, "output."):
		return "validation"
	case strings.HasPrefix(typ, "retry."):
		return "retry"
	}
	return "other"
}

// gates names the harness gate behind each tool rejection reason.
var gates = map[string]string{
	"unauthorized": "forced tool (not the state's authorized tool)",
	"schema":       "argument-schema gate",
	"permission":   "permission gate",
	"budget":       "circuit breaker",
}

// headline is one line saying what an event recorded, and whether it is bad news.
func headline(typ string, p map[string]any) (string, bool) {
	switch typ {
	case "run.started":
		return fmt.Sprintf("run started: %s · %s · %s", s(p["task"]), s(p["model"]), s(p["condition"])), false
	case "run.finished":
		st := s(p["status"])
		return "run finished: " + st, st != "succeeded"
	case "plan.proposed":
		return "plan proposed (attempt " + s(p["attempt"]) + ")", false
	case "plan.accepted":
		var steps []string
		if xs, ok := p["steps"].([]any); ok {
			for _, x := range xs {
				m, _ := x.(map[string]any)
				steps = append(steps, s(m["state"])+"→"+s(m["tool"]))
			}
		}
		return "plan accepted: " + strings.Join(steps, ", "), false
	case "plan.rejected":
		return "plan rejected (attempt " + s(p["attempt"]) + ")", true
	case "state.entered":
		if f := s(p["from"]); f != "" {
			return "entered " + s(p["state"]) + " from " + f, false
		}
		return "entered " + s(p["state"]), false
	case "state.exited":
		return "exited " + s(p["state"]) + " (" + s(p["outcome"]) + ")", s(p["outcome"]) != "" && s(p["outcome"]) != "ok"
	case "model.called":
		h := fmt.Sprintf("model %s (%s): %s prompt + %s completion tokens, %s ms", s(p["model"]), s(p["purpose"]),
			s(p["prompt_tokens"]), s(p["completion_tokens"]), trimNum(p["latency_ms"]))
		return h, s(p["error"]) != ""
	case "tool.called":
		return "tool called: " + s(p["tool"]), false
	case "tool.rejected":
		g := gates[s(p["reason"])]
		if g == "" {
			g = s(p["reason"])
		}
		return "tool rejected: " + s(p["tool"]) + " — by the " + g, true
	case "tool.returned":
		if b, _ := p["ok"].(bool); !b {
			return "tool failed: " + s(p["tool"]), true
		}
		return "tool returned: " + s(p["tool"]) + " (" + trimNum(p["duration_ms"]) + " ms)", false
	case "output.validated":
		return "output valid: " + s(p["state"]), false
	case "output.invalid":
		return "output invalid: " + s(p["state"]), true
	case "retry.scheduled":
		return "retry " + s(p["attempt"]) + " of " + s(p["state"]) + ": " + s(p["reason"]), true
	case "run.escalated":
		return "escalated: " + s(p["reason"]), true
	}
	return typ, false
}

// fields lists a payload's members in key order; objects, arrays and long or multi-line
// strings as blocks (objects and arrays as indented JSON).
func fields(p map[string]any) []field {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		switch x := p[k].(type) {
		case map[string]any, []any:
			out = append(out, field{Key: k, Value: jsonIndent(x), Block: true})
		default:
			t := s(x)
			out = append(out, field{Key: k, Value: t, Block: len(t) > 80 || strings.Contains(t, "\n")})
		}
	}
	return out
}

// rawEvent is the event as one indented JSON document: its envelope's columns and payload.
func rawEvent(row []any, payload string) string {
	env := map[string]any{"seq": integer(row[0]), "time": timeText(row[1]), "type": str(row[2]), "schema": integer(row[3]),
		"id": str(row[4]), "source": map[string]string{"kind": str(row[5]), "id": str(row[6])}, "payload": json.RawMessage(payload)}
	if !json.Valid([]byte(payload)) {
		env["payload"] = payload
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // html/template escapes the page; this is text
	enc.SetIndent("", "  ")
	_ = enc.Encode(env)
	return strings.TrimSpace(buf.String())
}

// jsonIndent is v as indented JSON text, <, > and & kept as they are (see jsonText).
func jsonIndent(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// s prints a decoded JSON value as text: strings as they are, numbers as written, the rest as
// JSON.
func s(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return jsonText(v)
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// trimNum prints a number as the event wrote it (a latency of 12.345678 stays as recorded).
func trimNum(v any) string { return s(v) }
