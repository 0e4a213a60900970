// Package samples holds a bundled sample of production agent traces (traces.jsonl: ditto
// events as JSON lines) and the deterministic generator that wrote it. The sample feeds
// `make demo`, the importer's tests and the analyzer's tests before any harness has run.
package samples

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dittolab/ditto/events"
)

// Traces is the bundled sample: study "sample-prod", an invoice-triage agent observed in two
// releases, 12 runs each.
//
//go:embed traces.jsonl
var Traces []byte

// Generate writes the sample: for each release, n runs of a four-step agent whose tool order
// and arguments vary with a seeded random source, as a production agent's do. Run i processes
// invoice INV-(1000 + i/3 mod 4), named by its input key: 12 runs are 4 invoices, each seen 3
// times in a row (runs 15 minutes apart), so that windows of an hour or less still hold
// repeated inputs to measure determinism on. Release "r2" varies less than "r1". The same seed
// always gives the same bytes.
func Generate(seed uint64, n int) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	var out []byte
	id := 0
	for _, release := range []struct {
		name   string
		wobble float64
	}{{"r1", 0.35}, {"r2", 0.08}} {
		for i := 0; i < n; i++ {
			run := fmt.Sprintf("%s-run-%03d", release.name, i)
			t := t0.Add(time.Duration(id) * time.Minute)
			seq := int64(0)
			emit := func(p events.Payload) error {
				seq++
				id++
				t = t.Add(time.Duration(50+rng.IntN(400)) * time.Millisecond)
				e := events.Envelope{
					Schema: events.SchemaVersion, ID: fmt.Sprintf("01SAMPLE%018d", id), Type: p.EventType(), Time: t,
					Study: "sample-prod", Run: run, Attempt: 1, Seq: seq,
					Source: events.Source{Kind: events.SourceProduction, ID: "invoice-triage"}, Payload: p,
				}
				b, err := events.Encode(&e)
				if err != nil {
					return err
				}
				out = append(append(out, b...), '\n')
				return nil
			}
			start := t
			invoice := i / 3 % 4
			if err := emit(events.RunStarted{Task: "invoice_triage", Model: "gpt-4o-mini", Condition: release.name,
				Components: []string{}, InputIndex: invoice, SeedIndex: i % 3, Endpoint: "production",
				InputKey: fmt.Sprintf("INV-%d", 1000+invoice)}); err != nil {
				return nil, err
			}
			if err := emit(events.PlanProposed{Text: planText(rng, release.wobble), Attempt: 1}); err != nil {
				return nil, err
			}
			tools := []string{"fetch_invoice", "extract_fields", "match_po", "route_invoice"}
			if rng.Float64() < release.wobble {
				tools[1], tools[2] = tools[2], tools[1] // the agent sometimes matches before extracting
			}
			var prompt, completion int64
			var output json.RawMessage
			for k, tool := range tools {
				pt, ct := int64(300+rng.IntN(200)), int64(20+rng.IntN(40))
				prompt, completion = prompt+pt, completion+ct
				if err := emit(events.ModelCalled{Model: "gpt-4o-mini", Purpose: "act", PromptTokens: pt, CompletionTokens: ct,
					LatencyMS: float64(300 + rng.IntN(900)), FinishReason: "tool_calls"}); err != nil {
					return nil, err
				}
				args := map[string]any{"invoice_id": fmt.Sprintf("INV-%d", 1000+invoice)}
				if rng.Float64() < release.wobble {
					args["currency"] = "EUR"
				}
				callID := fmt.Sprintf("call_%d", k+1)
				if err := emit(events.ToolCalled{CallID: callID, Tool: tool, Args: events.MustCanonical(args)}); err != nil {
					return nil, err
				}
				res := map[string]any{"ok": true, "step": tool}
				if tool == "route_invoice" {
					queue := "ap-standard"
					if rng.Float64() < release.wobble/2 {
						queue = "ap-review"
					}
					res = map[string]any{"invoice_id": args["invoice_id"], "queue": queue}
					output = events.MustCanonical(res)
				}
				if err := emit(events.ToolReturned{CallID: callID, Tool: tool, OK: true, Output: events.MustCanonical(res),
					DurationMS: float64(5 + rng.IntN(50))}); err != nil {
					return nil, err
				}
			}
			status := events.StatusSucceeded
			var q map[string]any
			_ = json.Unmarshal(output, &q)
			if q["queue"] != "ap-standard" {
				status = events.StatusFailed
			}
			if err := emit(events.RunFinished{Status: status, Success: status == events.StatusSucceeded, Output: output,
				Totals: events.Totals{PromptTokens: prompt, CompletionTokens: completion, ModelCalls: len(tools), ToolCalls: len(tools),
					LatencyMS: float64(t.Sub(start).Milliseconds())}}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func planText(rng *rand.Rand, wobble float64) string {
	if rng.Float64() < wobble {
		return "First pull the invoice, then match it to the purchase order and extract the fields, and route it."
	}
	return "1. fetch the invoice 2. extract fields 3. match the PO 4. route"
}
