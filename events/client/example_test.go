package client_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
)

// standIn is a stand-in for `producer serve` that validates and keeps what it receives.
type standIn struct {
	got []events.Envelope
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, events.MaxEventSize)
	n := 0
	for sc.Scan() {
		e, err := events.Decode(sc.Bytes())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.got = append(s.got, e)
		n++
	}
	fmt.Fprintf(w, `{"accepted":%d,"rejected":[]}`, n)
}

func Example() {
	server := &standIn{}
	ts := httptest.NewServer(server)
	defer ts.Close()

	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock }

	c, _ := client.New(ts.URL, client.WithToken("a-token-bound-to-prod-invoice"), client.WithSource("invoice-agent"), client.WithClock(tick))
	run, _ := c.StartRun(client.RunSpec{Study: "prod-invoice", Run: "run-0001", Task: "invoice_triage", Model: "gpt-4o", Condition: "r42"})
	run.Plan("1. fetch the invoice 2. route it")
	run.EnterState("fetch")
	run.ModelCalled(events.ModelCalled{Model: "gpt-4o", PromptTokens: 420, CompletionTokens: 31, LatencyMS: 850})
	call, _ := run.CallTool("fetch_invoice", map[string]any{"invoice_id": "INV-1", "fields": []string{"total"}})
	call.Return(map[string]any{"total": 120.5})
	run.ExitState("ok")
	if err := run.Finish(context.Background(), client.Result{Output: map[string]any{"queue": "ap-standard"}}); err != nil {
		fmt.Println(err)
	}

	for _, e := range server.got {
		fmt.Println(e.Seq, e.Type)
	}
	folded, err := events.Fold(server.got)
	fmt.Println("fold error:", err)
	fmt.Println("tools:", folded.Tools, "args:", string(folded.Calls[0].Args))
	fmt.Println("tokens:", folded.Finished.Totals.PromptTokens, folded.Finished.Totals.CompletionTokens, "output:", string(folded.Output))
	// Output:
	// 1 run.started
	// 2 plan.proposed
	// 3 state.entered
	// 4 model.called
	// 5 tool.called
	// 6 tool.returned
	// 7 state.exited
	// 8 run.finished
	// fold error: <nil>
	// tools: [fetch_invoice] args: {"fields":["total"],"invoice_id":"INV-1"}
	// tokens: 420 31 output: {"queue":"ap-standard"}
}
