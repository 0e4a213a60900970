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

// BenchmarkIngestRatio measures, back to back on one server, per op:
//
//   - 20,000 ditto events published directly with the bus publisher, and sent over HTTP with
//     the Go client (/v1/events): the ratio http/direct;
//   - 2,000 GenAI traces (14,000 spans) exported as OTLP protobuf over gRPC (the collector's
//     TraceService) and over HTTP (/v1/traces), and their span records published directly to
//     DITTO_SPANS with the bus publisher (what the receiver stores, without a transport): the
//     ratios grpc/direct, otlp-http/direct and grpc/otlp-http. The receiver runs alone (no
//     assembler), so the figures are those of the transports and the wait for JetStream.
//
// go test -run XXX -bench IngestRatio -benchtime 3x ./internal/receiver
func BenchmarkIngestRatio(b *testing.B) {
	e := newServerEnv(b, nil)
	conn := grpcClient(b, e)
	const n, traces = 20_000, 2_000
	var direct, http, spansDirect, spansHTTP, spansGRPC float64
	for i := 0; i < b.N; i++ {
		direct += publishDirect(b, e, benchEvents(b, fmt.Sprintf("rd%d", i), n))
		http += sendHTTP(b, e, benchEvents(b, fmt.Sprintf("rh%d", i), n))
		spansDirect += publishSpansDirect(b, e, spanRequests(b, 3*i, traces))
		spansHTTP += exportOTLP(b, func(req *coltracepb.ExportTraceServiceRequest) error {
			body, _ := proto.Marshal(req)
			resp, raw := e.post(b, "/v1/traces", tokAll, "application/x-protobuf", body)
			if resp.StatusCode != 200 {
				return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
			}
			return nil
		}, spanRequests(b, 3*i+1, traces))
		tc := coltracepb.NewTraceServiceClient(conn)
		spansGRPC += exportOTLP(b, func(req *coltracepb.ExportTraceServiceRequest) error {
			_, err := tc.Export(withToken(context.Background(), tokAll), req)
			return err
		}, spanRequests(b, 3*i+2, traces))
	}
	b.ReportMetric(direct/float64(b.N), "direct-events/s")
	b.ReportMetric(http/float64(b.N), "http-events/s")
	b.ReportMetric(http/direct, "http/direct")
	b.ReportMetric(spansDirect/float64(b.N), "direct-spans/s")
	b.ReportMetric(spansHTTP/float64(b.N), "otlp-http-spans/s")
	b.ReportMetric(spansGRPC/float64(b.N), "grpc-spans/s")
	b.ReportMetric(spansGRPC/spansDirect, "grpc/direct")
	b.ReportMetric(spansHTTP/spansDirect, "otlp-http/direct")
	b.ReportMetric(spansGRPC/spansHTTP, "grpc/otlp-http")
}

// spanRequests builds n GenAI traces of 7 spans (genai.json with distinct trace ids, tagged by
// set so that no two sets share one), 50 traces per export request.
func spanRequests(b *testing.B, set, n int) []*coltracepb.ExportTraceServiceRequest {
	raw, err := os.ReadFile(filepath.Join("..", "otlpmap", "testdata", "genai.json"))
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := otlpmap.DecodeJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	const perReq = 50
	var out []*coltracepb.ExportTraceServiceRequest
	for i := 0; i < n; i += perReq {
		req := &coltracepb.ExportTraceServiceRequest{}
		for j := i; j < min(i+perReq, n); j++ {
			rs := proto.Clone(tmpl.ResourceSpans[0]).(*tracepb.ResourceSpans)
			for _, sp := range rs.ScopeSpans[0].Spans {
				sp.TraceId = []byte(fmt.Sprintf("%04x%012x", set+1, j+1)) // 16 bytes
			}
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		out = append(out, req)
	}
	return out
}

// exportOTLP sends reqs with export from 4 concurrent exporters and returns spans/s.
func exportOTLP(b *testing.B, export func(*coltracepb.ExportTraceServiceRequest) error, reqs []*coltracepb.ExportTraceServiceRequest) float64 {
	const workers = 4
	work := make(chan *coltracepb.ExportTraceServiceRequest)
	var wg sync.WaitGroup
	spans := 0
	for _, r := range reqs {
		for _, rs := range r.ResourceSpans {
			spans += len(rs.ScopeSpans[0].Spans)
		}
	}
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range work {
				if err := export(req); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, r := range reqs {
		work <- r
	}
	close(work)
	wg.Wait()
	return float64(spans) / time.Since(start).Seconds()
}

// publishSpansDirect publishes the span records of reqs to DITTO_SPANS with the bus publisher,
// as the receiver stores them (subject and message id), and returns spans/s.
func publishSpansDirect(b *testing.B, e *env, reqs []*coltracepb.ExportTraceServiceRequest) float64 {
	p, err := e.bus.NewPublisher(bus.WithMaxInFlight(512))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	spans := 0
	start := time.Now()
	for _, req := range reqs {
		recs, _ := otlpmap.Records(req)
		for _, r := range recs {
			record := events.RecordSpan
			if r.Span.LocalRoot() {
				record = events.RecordRoot
			}
			subject, err := events.SpanSubject("production", r.Span.TraceID, record)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Publish(ctx, subject, "production."+r.Span.TraceID+"."+r.Span.SpanID, r.Data); err != nil {
				b.Fatal(err)
			}
			spans++
		}
	}
	if err := p.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(spans) / time.Since(start).Seconds()
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

// BenchmarkIngestOTLP measures OTLP/HTTP protobuf exports of complete GenAI traces (7 spans
// each, stored on DITTO_SPANS; 50 traces per request, 4 concurrent exporters), the receiver
// alone. One op is one trace.
//
// go test -run XXX -bench IngestOTLP -benchtime 4000x ./internal/receiver
func BenchmarkIngestOTLP(b *testing.B) {
	e := newServerEnv(b, nil)
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
	b.ReportMetric(float64(b.N*7)/secs, "spans/s")
	b.StopTimer()
	if n := spanRecords(b, e.bus); n != uint64(b.N*7) {
		b.Fatalf("DITTO_SPANS holds %d records, want %d", n, b.N*7)
	}
}
