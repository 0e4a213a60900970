package receiver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/otlpmap"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
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
// go test -run XXX -bench Ingest -benchtime 40000x ./internal/receiver
func BenchmarkIngest(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		e := newEnv(b, nil)
		evs := benchEvents(b, fmt.Sprintf("direct-%d", b.N), b.N)
		b.ResetTimer()
		b.ReportMetric(publishDirect(b, e, evs), "events/s")
	})
	b.Run("http", func(b *testing.B) {
		e := newEnv(b, nil)
		evs := benchEvents(b, fmt.Sprintf("http-%d", b.N), b.N)
		b.ResetTimer()
		b.ReportMetric(sendHTTP(b, e, evs), "events/s")
		b.StopTimer()
		if n := streamCount(b, e.bus); n != uint64(b.N) {
			b.Fatalf("stream holds %d events, want %d", n, b.N)
		}
	})
}

// BenchmarkIngestRatio measures both paths back to back on one server, per op 20,000 events
// each way, and reports their rates and the ratio http/direct.
//
// go test -run XXX -bench IngestRatio -benchtime 3x ./internal/receiver
func BenchmarkIngestRatio(b *testing.B) {
	e := newEnv(b, nil)
	const n = 20_000
	var direct, http float64
	for i := 0; i < b.N; i++ {
		direct += publishDirect(b, e, benchEvents(b, fmt.Sprintf("rd%d", i), n))
		http += sendHTTP(b, e, benchEvents(b, fmt.Sprintf("rh%d", i), n))
	}
	b.ReportMetric(direct/float64(b.N), "direct-events/s")
	b.ReportMetric(http/float64(b.N), "http-events/s")
	b.ReportMetric(http/direct, "http/direct")
}

// publishDirect publishes evs with the bus publisher and returns events/s.
func publishDirect(b *testing.B, e *env, evs []events.Envelope) float64 {
	p, err := e.bus.NewPublisher(bus.WithMaxInFlight(512))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for i := range evs {
		if err := p.PublishEvent(ctx, &evs[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(len(evs)) / time.Since(start).Seconds()
}

// sendHTTP sends evs with the Go client (batches of 500, 4 concurrent senders) and returns
// events/s.
func sendHTTP(b *testing.B, e *env, evs []events.Envelope) float64 {
	c, err := client.New(e.ts.URL, client.WithToken(tokAll))
	if err != nil {
		b.Fatal(err)
	}
	const batch, workers = 500, 4
	work := make(chan []events.Envelope)
	var wg sync.WaitGroup
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
	return float64(len(evs)) / time.Since(start).Seconds()
}

// BenchmarkIngestOTLP measures OTLP/HTTP protobuf exports of complete GenAI traces (7 spans,
// 10 events each; 50 traces per request, 4 concurrent exporters). One op is one trace.
//
// go test -run XXX -bench IngestOTLP -benchtime 4000x ./internal/receiver
func BenchmarkIngestOTLP(b *testing.B) {
	e := newEnv(b, nil)
	raw, err := os.ReadFile(filepath.Join("..", "otlpmap", "testdata", "genai.json"))
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := otlpmap.DecodeJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	const perReq, workers = 50, 4
	var bodies [][]byte
	for i := 0; i < b.N; i += perReq {
		req := &coltracepb.ExportTraceServiceRequest{}
		for j := i; j < min(i+perReq, b.N); j++ {
			rs := proto.Clone(tmpl.ResourceSpans[0]).(*tracepb.ResourceSpans)
			for _, sp := range rs.ScopeSpans[0].Spans {
				sp.TraceId = []byte(fmt.Sprintf("%016x", uint64(j)+1<<40)) // 16 bytes, distinct per trace
			}
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		body, _ := proto.Marshal(req)
		bodies = append(bodies, body)
	}
	work := make(chan []byte)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				for {
					resp, _ := e.post(b, "/v1/traces", tokAll, "application/x-protobuf", body)
					if resp.StatusCode == 200 {
						break
					}
					if resp.StatusCode != 429 && resp.StatusCode != 503 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
					time.Sleep(time.Millisecond) // throttled: back off briefly
				}
			}
		}()
	}
	for _, body := range bodies {
		work <- body
	}
	close(work)
	wg.Wait()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*10)/secs, "events/s")
	b.ReportMetric(float64(b.N*7)/secs, "spans/s")
	b.StopTimer()
	if n := streamCount(b, e.bus); n != uint64(b.N*10) {
		b.Fatalf("stream holds %d events, want %d", n, b.N*10)
	}
}
