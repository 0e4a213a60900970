package bus_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
)

// An agent that ditto does not run publishes its own trace: build events with the events
// package, publish them through the bus, and wait until JetStream has acknowledged all of them.
func Example_productionAgent() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ditto-example")
	defer os.RemoveAll(dir)

	// With no URL the bus hosts (or joins) an embedded server; in production pass
	// bus.Config{URL: "nats://nats:4222", CredsFile: "agent.creds"}.
	b, err := bus.Open(ctx, bus.Config{DataDir: dir, EmbeddedPort: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	if err := b.EnsureStreams(ctx); err != nil {
		fmt.Println(err)
		return
	}
	pub, _ := b.NewPublisher()

	seq := int64(0)
	record := func(p events.Payload) {
		seq++
		e := events.New("invoices-prod", "trace-7f3a", time.Now(), p)
		e.Seq = seq
		e.Source = events.Source{Kind: events.SourceProduction, ID: "invoice-agent"}
		if err := pub.PublishEvent(ctx, &e); err != nil {
			fmt.Println("invalid event:", err)
		}
	}
	record(events.RunStarted{Task: "invoice_triage", Model: "gpt-4o-mini", Condition: "release-42", Components: []string{}})
	record(events.ModelCalled{Model: "gpt-4o-mini", PromptTokens: 812, CompletionTokens: 41, LatencyMS: 930})
	args, _ := events.CanonicalValue(map[string]any{"invoice_id": "INV-1001"})
	record(events.ToolCalled{CallID: "c1", Tool: "fetch_invoice", Args: args})
	record(events.ToolReturned{CallID: "c1", Tool: "fetch_invoice", OK: true, Output: events.MustCanonical(map[string]any{"total": 120.5})})
	record(events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: events.MustCanonical("ap-standard")})

	if err := pub.Wait(ctx); err != nil {
		fmt.Println("not stored:", err)
		return
	}
	s, _ := b.JetStream().Stream(ctx, events.EventsStream)
	info, _ := s.Info(ctx)
	fmt.Println("stored events:", info.State.Msgs)
	// Output: stored events: 5
}
