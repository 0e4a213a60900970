package warehouse_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// contextRun emits one coding-like run of the given context events between run.started and
// run.finished (status given); every model.called is a summarization call unless it is not
// followed by context.summarized.
func (s *synth) contextRun(run, status string, ps ...events.Payload) {
	seq := int64(0)
	next := func(p events.Payload) { seq++; s.emit(run, 1, seq, p) }
	next(events.RunStarted{Task: "coding-inventory-nil-map", Model: "sim-a", Condition: "c-" + run,
		Components: []string{events.ComponentUpdatePlan}, Simulated: true})
	calls, tools := 0, 0
	var totals events.Totals
	for _, p := range ps {
		switch p := p.(type) {
		case events.ModelCalled:
			calls++
			totals.PromptTokens += p.PromptTokens
			totals.CompletionTokens += p.CompletionTokens
		case events.ToolCalled:
			tools++
		}
		next(p)
	}
	next(events.RunFinished{Status: status, Output: events.MustCanonical(map[string]string{"patch": run}), Totals: events.Totals{PromptTokens: totals.PromptTokens, CompletionTokens: totals.CompletionTokens, ModelCalls: calls, ToolCalls: tools}})
}

// contextStudy: the study of TestContextViews's context columns and the per-turn series, from a T0 run
// that overflows at its third request and a T4 run that elides, summarizes, recalls and plans.
func contextStudy(t testing.TB) []msg {
	s := newSynth(t, "ctx")
	act := events.ModelCalled{Model: "sim-a", Purpose: "act", PromptTokens: 10, CompletionTokens: 1}
	s.contextRun("t0", events.StatusOverflow,
		events.ContextConfigured{Tier: "T0", Budget: 1000},
		events.ContextPrepared{Turn: 1, Tokens: 400, Budget: 1000, Messages: 2},
		act,
		events.ContextPrepared{Turn: 2, Tokens: 900, Budget: 1000, Messages: 4},
		act,
		events.ContextOverflowed{Turn: 3, Tier: "T0", Needed: 1300, Budget: 1000},
	)
	s.contextRun("t4", events.StatusSucceeded,
		events.ContextConfigured{Tier: "T4", Budget: 1000, Soft: 600, Hard: 850, Recent: 3, Bulky: 200, SummaryTokens: 256},
		events.ContextPrepared{Turn: 1, Tokens: 400, Budget: 1000, Messages: 3},
		act,
		events.ToolCalled{CallID: "p1", Tool: "update_plan", Args: events.MustCanonical(map[string]any{})},
		events.PlanUpdated{CallID: "p1", Steps: []events.PlanUpdate{{Step: "read", Status: "in_progress"}}},
		events.ToolReturned{CallID: "p1", Tool: "update_plan", OK: true, Output: events.MustCanonical("ok")},
		events.ContextElided{Turn: 2, IDs: []string{"o1", "o2"}, Saved: 300},
		events.ModelCalled{Model: "sim-a", Purpose: events.PurposeSummarize, PromptTokens: 50, CompletionTokens: 5},
		events.ContextSummarized{Turn: 2, Folded: []string{"m1", "o1"}, Steps: 1, Before: 900, After: 500, SummaryTokens: 80},
		events.ModelCalled{Model: "sim-a", Purpose: events.PurposeSummarize, PromptTokens: 50, CompletionTokens: 5},
		events.ContextSummarized{Turn: 2, Folded: []string{"m2"}, Steps: 1, Before: 500, After: 450, SummaryTokens: 90},
		events.ContextPrepared{Turn: 2, Tokens: 820, Budget: 1000, Messages: 5, Recent: 3},
		act,
		events.ToolCalled{CallID: "r1", Tool: "recall_event", Args: events.MustCanonical(map[string]any{"id": "o2"})},
		events.ContextRecalled{CallID: "r1", ID: "o2", Tokens: 250},
		events.ToolReturned{CallID: "r1", Tool: "recall_event", OK: true, Output: events.MustCanonical("ok")},
		events.ContextPrepared{Turn: 3, Tokens: 700, Budget: 1000, Messages: 7, Recent: 3},
		act,
	)
	return s.out
}

// TestContextViews: the runs view's context columns and the per-turn series, from a T0 run
// that overflows at its third request and a T4 run that elides, summarizes, recalls and plans.
func TestContextViews(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b, contextStudy(t))
	w := warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 50, BatchWait: 20 * time.Millisecond})
	db := w.DB()

	rows, err := db.Query(`SELECT run, status, context_tier, context_budget, peak_context, overflowed, elisions, recalls, summaries,
		plan_updates, fold_error FROM runs WHERE study = 'ctx' ORDER BY run`)
	if err != nil {
		t.Fatal(err)
	}
	got := warehousetest.Rows(t, rows)
	want := []string{
		"run=t0 | status=overflow | context_tier=T0 | context_budget=1000 | peak_context=900 | overflowed=true | elisions=0 | recalls=0 | summaries=0 | plan_updates=0 | fold_error=NULL",
		"run=t4 | status=succeeded | context_tier=T4 | context_budget=1000 | peak_context=820 | overflowed=false | elisions=1 | recalls=1 | summaries=2 | plan_updates=1 | fold_error=NULL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs context columns:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rows, err = db.Query(`SELECT run, turn, tokens, budget, fits, messages, elided, tokens_saved, summarized
		FROM context_series WHERE study = 'ctx' ORDER BY run, turn`)
	if err != nil {
		t.Fatal(err)
	}
	got = warehousetest.Rows(t, rows)
	want = []string{
		"run=t0 | turn=1 | tokens=400 | budget=1000 | fits=true | messages=2 | elided=0 | tokens_saved=0 | summarized=0",
		"run=t0 | turn=2 | tokens=900 | budget=1000 | fits=true | messages=4 | elided=0 | tokens_saved=0 | summarized=0",
		"run=t0 | turn=3 | tokens=1300 | budget=1000 | fits=false | messages=NULL | elided=0 | tokens_saved=0 | summarized=0",
		"run=t4 | turn=1 | tokens=400 | budget=1000 | fits=true | messages=3 | elided=0 | tokens_saved=0 | summarized=0",
		"run=t4 | turn=2 | tokens=820 | budget=1000 | fits=true | messages=5 | elided=2 | tokens_saved=300 | summarized=2",
		"run=t4 | turn=3 | tokens=700 | budget=1000 | fits=true | messages=7 | elided=0 | tokens_saved=0 | summarized=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("context_series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
