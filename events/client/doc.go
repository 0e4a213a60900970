// Package client records the runs of a production agent as ditto events and sends them to a
// ditto ingestion server (`producer serve`, POST /v1/events). It depends on the standard
// library and the events package only, so any Go agent can import it.
//
// An agent records a run in a few lines:
//
//	c, _ := client.New("http://ditto-ingest:4318", client.WithToken(os.Getenv("DITTO_TOKEN")))
//	run, _ := c.StartRun(client.RunSpec{Study: "prod-invoice", Task: "invoice_triage", Model: "gpt-4o", Condition: "r42",
//		InputKey: "INV-1"})
//	run.Plan("1. fetch 2. route")
//	run.EnterState("fetch")
//	call, _ := run.CallTool("fetch_invoice", map[string]any{"invoice_id": "INV-1"})
//	call.Return(invoice)
//	run.ExitState("ok")
//	run.ModelCalled(events.ModelCalled{Model: "gpt-4o", PromptTokens: 420, CompletionTokens: 31})
//	err := run.Finish(ctx, client.Result{Output: decision})
//
// RunSpec.InputKey names the input the run processes: ditto measures the determinism of
// production traffic between runs of the same input only (an input group: input key, task,
// model, release). Without it, the key is derived from RunSpec.Input when given (a hash of its
// canonical JSON); a run with neither is compared with no other run.
//
// The Run assigns sequence numbers, event ids, times and the source; arguments, outputs and
// results are stored as canonical JSON (RFC 8785). Every event is checked as it is recorded,
// against the schema and against the run so far (events.Run.Apply), so a misuse (returning a
// tool call twice, exiting a state never entered) is an error at the call that made it, not a
// poison message later. Events are buffered in memory and sent by Flush and Finish; a send
// retries on 429, 503 and network errors (honouring Retry-After), and is idempotent on event ids.
package client
