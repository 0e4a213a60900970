package harness_test

import (
	"context"
	"fmt"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/tasks"
)

// A worker resolves the job's condition, builds the spec, wraps its publisher in a Sequencer
// (one per run attempt) and runs. Here the model is the ideal agent and the publisher prints.
func ExampleRun() {
	cond, err := condition.Parse("harness_sp")
	if err != nil {
		panic(err)
	}
	seed := int64(42)
	spec := harness.RunSpec{Task: "aml_screening", Instance: 1, SeedIndex: 0, Condition: cond,
		Model: "ideal", Seed: &seed}
	em := &harness.Sequencer{Study: "demo", Run: "run-1", Attempt: 1,
		Source: events.Source{Kind: events.SourceHarness, ID: "worker-1"},
		Publish: func(_ context.Context, e *events.Envelope) error {
			fmt.Println(e.Seq, e.Type)
			return nil
		}}
	task, _ := tasks.Get("aml_screening")
	res, err := harness.Run(context.Background(), spec, harnesstest.IdealModel(task), em)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, string(res.Output))
	// Output:
	// 1 run.started
	// 2 model.called
	// 3 plan.proposed
	// 4 plan.accepted
	// 5 state.entered
	// 6 model.called
	// 7 tool.called
	// 8 tool.returned
	// 9 output.validated
	// 10 state.exited
	// 11 state.entered
	// 12 model.called
	// 13 tool.called
	// 14 tool.returned
	// 15 output.validated
	// 16 state.exited
	// 17 state.entered
	// 18 model.called
	// 19 tool.called
	// 20 tool.returned
	// 21 output.validated
	// 22 state.exited
	// 23 state.entered
	// 24 model.called
	// 25 tool.called
	// 26 tool.returned
	// 27 output.validated
	// 28 state.exited
	// 29 run.finished
	// succeeded {"customer_id":"cust-b","outcome":"escalated_to_mlro","report":"aml_screening","report_path":"reports/aml_screening/cust-b","risk_rating":"high"}
}
