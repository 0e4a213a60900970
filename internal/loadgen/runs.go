package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
)

// EventsPerRun is the length of every generated run: run.started, plan.proposed, four steps
// of model.called, tool.called and tool.returned, run.finished.
const EventsPerRun = 2 + 4*3 + 1

// runs generates runs of a four-step agent, in the shape of internal/samples (an
// invoice-triage agent observed in production) with realistic payload sizes: tool results
// carry a few hundred bytes to a few kilobytes of data. It is not safe for concurrent use.
type runs struct {
	study string
	rng   *rand.Rand
	n     int // runs started so far
}

func newRuns(study string, seed uint64) *runs {
	return &runs{study: study, rng: rand.New(rand.NewPCG(seed, 0x10ad))}
}

var loadTools = []string{"fetch_invoice", "extract_fields", "match_po", "route_invoice"}

// next returns the events of the next run, stamped from t.
func (g *runs) next(t time.Time) []*events.Envelope {
	rng := g.rng
	run := fmt.Sprintf("run-%07d", g.n)
	g.n++
	out := make([]*events.Envelope, 0, EventsPerRun)
	emit := func(p events.Payload) {
		t = t.Add(time.Duration(1+rng.IntN(5)) * time.Millisecond)
		e := &events.Envelope{
			Schema: events.SchemaVersion, ID: events.NewID(t), Type: p.EventType(), Time: t,
			Study: g.study, Run: run, Attempt: 1, Seq: int64(len(out) + 1),
			Source: events.Source{Kind: events.SourceProduction, ID: "loadgen"}, Payload: p,
		}
		out = append(out, e)
	}
	release := []string{"r1", "r2"}[g.n%2]
	emit(events.RunStarted{Task: "invoice_triage", Model: "gpt-4o-mini", Condition: release,
		Components: []string{}, InputIndex: g.n % 16, SeedIndex: g.n / 16, Endpoint: "production"})
	plan := "1. fetch the invoice 2. extract fields 3. match the PO 4. route"
	if rng.IntN(4) == 0 {
		plan = "First pull the invoice, then match it to the purchase order and extract the fields, and route it."
	}
	emit(events.PlanProposed{Text: plan, Attempt: 1})
	tools := append([]string(nil), loadTools...)
	if rng.IntN(5) == 0 {
		tools[1], tools[2] = tools[2], tools[1]
	}
	var totals events.Totals
	var output []byte
	invoice := fmt.Sprintf("INV-%d", 1000+g.n%16)
	for k, tool := range tools {
		pt, ct := int64(300+rng.IntN(1500)), int64(20+rng.IntN(200))
		lat := float64(200 + rng.IntN(1500))
		totals.PromptTokens += pt
		totals.CompletionTokens += ct
		totals.ModelCalls++
		totals.ToolCalls++
		totals.LatencyMS += lat
		emit(events.ModelCalled{Model: "gpt-4o-mini", Purpose: "act", PromptTokens: pt, CompletionTokens: ct,
			LatencyMS: lat, FinishReason: "tool_calls"})
		args := map[string]any{"invoice_id": invoice}
		if rng.IntN(3) == 0 {
			args["currency"] = "EUR"
		}
		callID := fmt.Sprintf("call_%d", k+1)
		emit(events.ToolCalled{CallID: callID, Tool: tool, Args: events.MustCanonical(args)})
		res := map[string]any{"ok": true, "step": tool, "data": lines(rng, 2+rng.IntN(30))}
		if tool == "route_invoice" {
			queue := "ap-standard"
			if rng.IntN(10) == 0 {
				queue = "ap-review"
			}
			res = map[string]any{"invoice_id": invoice, "queue": queue}
			output = events.MustCanonical(res)
		}
		emit(events.ToolReturned{CallID: callID, Tool: tool, OK: true, Output: events.MustCanonical(res),
			DurationMS: float64(5 + rng.IntN(50))})
	}
	status := events.StatusSucceeded
	if strings.Contains(string(output), "ap-review") {
		status = events.StatusFailed
	}
	emit(events.RunFinished{Status: status, Success: status == events.StatusSucceeded, Output: output, Totals: totals})
	return out
}

// lines is a tool result's bulk: n invoice line items.
func lines(rng *rand.Rand, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", rng.IntN(100000)), "qty": 1 + rng.IntN(20),
			"unit_price": float64(rng.IntN(100000)) / 100, "description": "office supplies, assorted"}
	}
	return out
}
