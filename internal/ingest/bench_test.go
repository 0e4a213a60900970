package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
	"github.com/dittolab/ditto/internal/bus"
)

// benchEvents returns n distinct, valid events (runs of 50 events each).
func benchEvents(b *testing.B, prefix string, n int) []events.Envelope {
	b.Helper()
	out := make([]events.Envelope, 0, n+50)
	for r := 0; len(out) < n; r++ {
		out = append(out, runEvents(b, "prod", fmt.Sprintf("%s-%d", prefix, r), 24)...)
	}
	return out[:n]
}

// BenchmarkIngest compares, in one run on one machine, events/s stored in JetStream:
//
//	direct: the bus publisher (what the harness worker does), encode + publish + wait for acks;
//	http:   the Go client over HTTP to the ingestion server (NDJSON batches of 500 from 4
//	        concurrent clients), which decodes, validates, publishes and waits for the acks
//	        before answering.
//
// go test -run XXX -bench Ingest -benchtime 40000x ./internal/ingest
func BenchmarkIngest(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		e := newEnv(b, nil)
		evs := benchEvents(b, fmt.Sprintf("direct-%d", b.N), b.N)
		p, err := e.bus.NewPublisher(bus.WithMaxInFlight(512))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ResetTimer()
		start := time.Now()
		for i := range evs {
			if err := p.PublishEvent(ctx, &evs[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	})
	b.Run("http", func(b *testing.B) {
		e := newEnv(b, nil)
		evs := benchEvents(b, fmt.Sprintf("http-%d", b.N), b.N)
		c, err := client.New(e.ts.URL, client.WithToken(tokAll))
		if err != nil {
			b.Fatal(err)
		}
		const batch, workers = 500, 4
		work := make(chan []events.Envelope)
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for chunk := range work {
					if err := c.Send(context.Background(), chunk); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := 0; i < len(evs); i += batch {
			work <- evs[i:min(i+batch, len(evs))]
		}
		close(work)
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		b.StopTimer()
		if n := streamCount(b, e.bus); n != uint64(b.N) {
			b.Fatalf("stream holds %d events, want %d", n, b.N)
		}
	})
}
