package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
)

// standIn is a stand-in for `producer serve`: it decodes and validates each NDJSON line as the
// server does, refuses events of studies its token is not bound to, and keeps the rest.
type standIn struct {
	studies map[string]bool // the studies the token may write; nil: any
	got     []events.Envelope
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, events.MaxEventSize)
	var resp struct {
		Accepted int               `json:"accepted"`
		Rejected []client.Rejected `json:"rejected"`
	}
	resp.Rejected = []client.Rejected{}
	for i := 0; sc.Scan(); i++ {
		e, err := events.Decode(sc.Bytes())
		switch {
		case err != nil:
			resp.Rejected = append(resp.Rejected, client.Rejected{Index: i, Line: i + 1, Reason: "invalid", Detail: err.Error()})
		case s.studies != nil && !s.studies[e.Study]:
			resp.Rejected = append(resp.Rejected, client.Rejected{Index: i, Line: i + 1, ID: e.ID, Reason: "forbidden",
				Detail: fmt.Sprintf("study %q is not bound to this token", e.Study)})
		default:
			s.got = append(s.got, e)
			resp.Accepted++
		}
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func Example() {
	server := &standIn{}
	ts := httptest.NewServer(server)
	defer ts.Close()

	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock }

	c, _ := client.New(ts.URL, client.WithToken("a-token-bound-to-prod-invoice"), client.WithSource("invoice-agent"), client.WithClock(tick))
	run, _ := c.StartRun(client.RunSpec{Study: "prod-invoice", Run: "run-0001", Task: "invoice_triage", Model: "gpt-4o", Condition: "r42",
		InputKey: "INV-1"})
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
	fmt.Println("input key:", folded.Started.ResolvedInputKey())
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
	// input key: INV-1
}

// An agent with its own recorder builds the events itself and sends them in one request. The
// server stores what it accepts and names each event it refuses; re-sending is safe, since
// the server stores each event id once.
func ExampleClient_Send() {
	server := &standIn{studies: map[string]bool{"prod-invoice": true}}
	ts := httptest.NewServer(server)
	defer ts.Close()

	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var batch []events.Envelope
	for _, study := range []string{"prod-invoice", "prod-payroll"} {
		e := events.New(study, "run-0001", at, events.RunStarted{Task: "triage", Model: "gpt-4o", Condition: "r42", Components: []string{}})
		e.ID = events.DerivedID(at, study, "run-0001", "run.started") // or keep New's fresh id
		e.Seq, e.Source = 1, events.Source{Kind: events.SourceProduction, ID: "invoice-agent"}
		batch = append(batch, e)
	}

	c, _ := client.New(ts.URL, client.WithToken("a-token-bound-to-prod-invoice"))
	err := c.Send(context.Background(), batch)
	var be *client.BatchError
	if errors.As(err, &be) {
		fmt.Println("accepted:", be.Accepted)
		for _, r := range be.Rejected {
			fmt.Printf("event %d refused (%s): %s\n", r.Index, r.Reason, r.Detail)
		}
	}
	fmt.Println("stored:", len(server.got), server.got[0].Study)
	// Output:
	// accepted: 1
	// event 1 refused (forbidden): study "prod-payroll" is not bound to this token
	// stored: 1 prod-invoice
}

// A tool that fails and a run that ends in failure are recorded as such; the run's totals are
// computed from what was recorded.
func ExampleToolCall_Fail() {
	server := &standIn{}
	ts := httptest.NewServer(server)
	defer ts.Close()

	c, _ := client.New(ts.URL, client.WithSource("invoice-agent"))
	run, _ := c.StartRun(client.RunSpec{Study: "prod-invoice", Task: "invoice_triage", Model: "gpt-4o"})
	call, _ := run.CallTool("fetch_invoice", map[string]any{"invoice_id": "INV-404"})
	call.Fail(errors.New("invoice not found"))
	err := run.Finish(context.Background(), client.Result{Err: errors.New("no invoice to route")})
	fmt.Println("finish:", err)

	for _, e := range server.got {
		switch p := e.Payload.(type) {
		case events.ToolReturned:
			fmt.Println(e.Type, "ok:", p.OK, "error:", p.Error)
		case events.RunFinished:
			fmt.Println(e.Type, p.Status, "error:", p.Error, "tool calls:", p.Totals.ToolCalls)
		}
	}
	// Output:
	// finish: <nil>
	// tool.returned ok: false error: invoice not found
	// run.finished failed error: no invoice to route tool calls: 1
}
