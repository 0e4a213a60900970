package warehousetest

import (
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
)

// ContextStudy is a synthetic study of context-managed runs, for the tests of what reads
// them: one task, model m, tiers T0 and T2 at a budget of 1000, planning on and off,
// four seeds. Under T0 seeds 0 and 1 overflow; under T2 seed 3 fails and seed 0 recalls.
func ContextStudy(study string) []events.Envelope {
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var out []events.Envelope
	n := 0
	for _, tier := range []string{"T0", "T2"} {
		for _, plan := range []bool{false, true} {
			cond := fmt.Sprintf("c_%s_plan%v", tier, plan)
			comps := []string{}
			if plan {
				comps = []string{events.ComponentUpdatePlan}
			}
			for seed := range 4 {
				run := fmt.Sprintf("%s-%d", cond, seed)
				seq := int64(0)
				emit := func(p events.Payload) {
					seq++
					n++
					clock = clock.Add(time.Millisecond)
					e := events.New(study, run, clock, p)
					e.ID = fmt.Sprintf("01CTX%021d", n)
					e.Seq = seq
					e.Source = events.Source{Kind: events.SourceHarness, ID: "w"}
					out = append(out, e)
				}
				sd := int64(seed)
				emit(events.RunStarted{Task: "fix", Model: "m", Condition: cond, Components: comps, SeedIndex: seed, Seed: &sd, Simulated: true})
				emit(events.ContextConfigured{Tier: tier, Budget: 1000})
				turns := 2 + seed
				var prompt, calls int64
				status, success := events.StatusSucceeded, true
				for turn := 1; turn <= turns; turn++ {
					if tier == "T0" && seed < 2 && turn == turns {
						emit(events.ContextOverflowed{Turn: turn, Tier: tier, Needed: 1200, Budget: 1000})
						status, success = events.StatusOverflow, false
						break
					}
					emit(events.ContextPrepared{Turn: turn, Tokens: 150 * turn, Budget: 1000, Messages: 2 * turn})
					emit(events.ModelCalled{Model: "m", Purpose: "act", PromptTokens: int64(150 * turn), CompletionTokens: 10})
					prompt += int64(150 * turn)
					calls++
				}
				if tier == "T2" && seed == 3 {
					status, success = events.StatusFailed, false
				}
				tools := 0
				if tier == "T2" && seed == 0 {
					emit(events.ContextElided{Turn: 2, IDs: []string{"o1"}, Saved: 200})
					emit(events.ToolCalled{CallID: "r", Tool: "recall_event", Args: events.MustCanonical(map[string]string{"id": "o1"})})
					emit(events.ContextRecalled{CallID: "r", ID: "o1", Tokens: 200})
					emit(events.ToolReturned{CallID: "r", Tool: "recall_event", OK: true, Output: events.MustCanonical("body")})
					tools = 1
				}
				emit(events.RunFinished{Status: status, Success: success, Output: events.MustCanonical(map[string]string{"patch": run}),
					Totals: events.Totals{PromptTokens: prompt, CompletionTokens: 10 * calls, ModelCalls: int(calls), ToolCalls: tools}})
			}
		}
	}
	return out
}
