package receiver_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
)

// TestGoClientIntoJetStream: agents using the Go client against the real server; their runs
// are in JetStream when Finish returns, and fold.
func TestGoClientIntoJetStream(t *testing.T) {
	e := newEnv(t, nil)
	c, err := client.New(e.ts.URL, client.WithToken(tokProd), client.WithSource("invoice-agent"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	const runs = 8
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			run, err := c.StartRun(client.RunSpec{Study: "prod", Run: fmt.Sprintf("run-%d", i), Task: "invoice_triage", Model: "gpt-4o", Condition: "r1"})
			if err != nil {
				t.Error(err)
				return
			}
			run.Plan("fetch, then route")
			run.EnterState("fetch")
			run.ModelCalled(events.ModelCalled{Model: "gpt-4o", PromptTokens: 100, CompletionTokens: 10})
			call, _ := run.CallTool("fetch_invoice", map[string]any{"id": i})
			call.Return(map[string]any{"total": i * 10})
			run.ExitState("ok")
			if err := run.Flush(ctx); err != nil { // mid-run flush: the run arrives in two sends
				t.Error(err)
			}
			run.EnterState("route")
			call, _ = run.CallTool("route", map[string]any{"queue": "ap"})
			call.Fail(errors.New("queue closed"))
			run.ExitState("error")
			if err := run.Finish(ctx, client.Result{Err: errors.New("could not route")}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	got := folds(t, stored(t, e.bus))
	if len(got) != runs {
		t.Fatalf("%d runs stored, want %d", len(got), runs)
	}
	for k, r := range got {
		if !r.Done() || r.Finished.Status != events.StatusFailed || len(r.Tools) != 2 || r.PromptTokens != 100 ||
			r.Finished.Totals.ToolCalls != 2 || len(r.States) != 2 {
			t.Errorf("%s = %+v", k, r)
		}
	}
	// A study the token is not bound to: refused by the server, reported by the client.
	run, _ := c.StartRun(client.RunSpec{Study: "other", Task: "t", Model: "m"})
	err = run.Finish(ctx, client.Result{})
	var be *client.BatchError
	if !errors.As(err, &be) || len(be.Rejected) != 2 || be.Rejected[0].Reason != "forbidden" {
		t.Errorf("Finish() in a forbidden study = %v, want a BatchError of 2 forbidden events", err)
	}
}
