package receiver_test

import (
	"context"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/dittolab/ditto/internal/receiver"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// grpcClient serves the env's server over OTLP/gRPC on loopback and returns a connection to it.
func grpcClient(t testing.TB, e *env) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := e.srv.GRPCServer()
	go func() { _ = gs.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
	})
	return conn
}

func withToken(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// TestGRPCExport: the collector's TraceService over gRPC (gzip-compressed, as exporters send
// it) stores agent traces like OTLP/HTTP, refuses calls without a valid token or to a study the
// token may not write, and tells the client which spans were not agent spans.
func TestGRPCExport(t *testing.T) {
	e := newEnv(t, nil)
	tc := coltracepb.NewTraceServiceClient(grpcClient(t, e))
	ctx := ctxT(t, 30*time.Second)
	gz := grpc.UseCompressor(gzip.Name)

	req := mustDecode(t, payload(t, "genai.json"))
	resp, err := tc.Export(withToken(ctx, tokAll), req, gz)
	if err != nil || resp.GetPartialSuccess() != nil {
		t.Fatalf("Export(genai) = %v, %v; want OK without rejections", resp, err)
	}
	if runs := waitFinished(t, e.bus, 1); len(runs) != 1 {
		t.Errorf("%d runs after a gRPC export, want 1", len(runs))
	}

	resp, err = tc.Export(withToken(ctx, tokAll), mustDecode(t, payload(t, "no_genai.json")), gz)
	if ps := resp.GetPartialSuccess(); err != nil || ps.GetRejectedSpans() == 0 || !strings.Contains(ps.GetErrorMessage(), "agent span") {
		t.Errorf("Export(no_genai) = %v, %v; want OK with its spans rejected as not agent spans", ps, err)
	}

	for _, tt := range []struct {
		name string
		ctx  context.Context
		req  *coltracepb.ExportTraceServiceRequest
		want codes.Code
	}{
		{"no token", ctx, req, codes.Unauthenticated},
		{"wrong token", withToken(ctx, "wrong-token-wrong-token"), req, codes.Unauthenticated},
		{"forbidden study", withToken(ctx, tokProd), mustDecode(t, []byte(strings.Replace(string(payload(t, "genai.json")),
			`"service.name"`, `"ditto.study", "value": {"stringValue": "other"}}, {"key": "x"`, 1))), codes.PermissionDenied},
	} {
		if _, err := tc.Export(tt.ctx, tt.req); status.Code(err) != tt.want || status.Convert(err).Message() == "" {
			t.Errorf("%s: Export() = %v, want %v with a message", tt.name, err, tt.want)
		}
	}
}

// TestGRPCBackpressure: with JetStream down an export is refused UNAVAILABLE, and while the
// server's one call slot is taken another is refused RESOURCE_EXHAUSTED; both carry RetryInfo,
// without which OTLP exporters do not retry RESOURCE_EXHAUSTED.
func TestGRPCBackpressure(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) {
		c.MaxConcurrent = 1
		c.AckTimeout, c.AdmitWait = 2*time.Second, 2*time.Second
		c.DisableSeenCheck = true
	})
	tc := coltracepb.NewTraceServiceClient(grpcClient(t, e))
	ctx := withToken(ctxT(t, 60*time.Second), tokAll)
	req := mustDecode(t, payload(t, "genai.json"))
	e.nats.Stop()

	retryInfo := func(err error) *errdetails.RetryInfo {
		for _, d := range status.Convert(err).Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				return ri
			}
		}
		return nil
	}
	if _, err := tc.Export(ctx, req); status.Code(err) != codes.Unavailable || retryInfo(err) == nil {
		t.Fatalf("Export() with JetStream down = %v, want UNAVAILABLE with RetryInfo", err)
	}
	var exhausted error
	for attempt := 0; exhausted == nil; attempt++ {
		if attempt == 20 {
			t.Fatal("no call was refused RESOURCE_EXHAUSTED while another held the only slot")
		}
		first := make(chan error, 1)
		go func() { _, err := tc.Export(ctx, req); first <- err }()
		deadline := time.Now().Add(5 * time.Second)
		for exhausted == nil && time.Now().Before(deadline) {
			select {
			case err := <-first:
				if c := status.Code(err); (c != codes.Unavailable && c != codes.ResourceExhausted) || retryInfo(err) == nil {
					t.Fatalf("Export() with JetStream down = %v, want UNAVAILABLE or RESOURCE_EXHAUSTED with RetryInfo", err)
				}
				deadline = time.Time{} // the slot is free again: start over
				continue
			default:
			}
			_, err := tc.Export(ctx, req)
			if status.Code(err) == codes.ResourceExhausted {
				exhausted = err
			}
		}
		if exhausted != nil {
			<-first
		}
	}
	if ri := retryInfo(exhausted); ri == nil || ri.GetRetryDelay().AsDuration() < time.Second {
		t.Errorf("RESOURCE_EXHAUSTED details %v, want RetryInfo with a delay of at least 1s", status.Convert(exhausted).Details())
	}
}

// TestLogsExport: GenAI events sent on the logs signal (OTLP/HTTP and gRPC) are stored and join
// the calls of their span's run; a log record that is not a GenAI event of a span is counted in
// partial_success with the reason.
func TestLogsExport(t *testing.T) {
	e := newEnv(t, nil)
	conn := grpcClient(t, e)
	ctx := withToken(ctxT(t, 30*time.Second), tokAll)
	traces := mustDecode(t, payload(t, "genai.json"))
	var chat *struct{ trace, span []byte }
	spans, _ := otlpmap.Spans(traces)
	for _, sp := range spans {
		if op, _ := sp.Attrs.Str("gen_ai.operation.name"); op == "chat" && chat == nil {
			tid, _ := hex.DecodeString(sp.TraceID)
			sid, _ := hex.DecodeString(sp.SpanID)
			chat = &struct{ trace, span []byte }{tid, sid}
		}
	}
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	record := func(name, content string) *logspb.LogRecord {
		return &logspb.LogRecord{EventName: name, TraceId: chat.trace, SpanId: chat.span, TimeUnixNano: 1,
			Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
				Values: []*commonpb.KeyValue{{Key: "content", Value: str(content)}}}}}}
	}
	logs := func(recs ...*logspb.LogRecord) *collogspb.ExportLogsServiceRequest {
		return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: recs}}}}}
	}
	// The user message by gRPC, the plain log line and the choice by HTTP (protobuf), before the
	// trace: the run is assembled with them.
	if resp, err := collogspb.NewLogsServiceClient(conn).Export(ctx, logs(record("gen_ai.user.message", "Route invoice INV-1000"))); err != nil || resp.GetPartialSuccess() != nil {
		t.Fatalf("gRPC logs Export() = %v, %v", resp, err)
	}
	plain := &logspb.LogRecord{TimeUnixNano: 1, Body: str("GET / 200")}
	body, _ := proto.Marshal(logs(plain, record("gen_ai.choice", "ap-standard")))
	resp, raw := e.post(t, "/v1/logs", tokAll, "application/x-protobuf", body)
	var lr collogspb.ExportLogsServiceResponse
	if err := proto.Unmarshal(raw, &lr); err != nil || resp.StatusCode != 200 || lr.GetPartialSuccess().GetRejectedLogRecords() != 1 {
		t.Fatalf("POST /v1/logs = %d %v (%v), want 200 with the plain record rejected", resp.StatusCode, lr.GetPartialSuccess(), err)
	}
	if _, err := coltracepb.NewTraceServiceClient(conn).Export(ctx, traces); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, e.bus, 1)
	var call *events.ModelCalled
	for _, ev := range stored(t, e.bus) {
		if p, ok := ev.Payload.(events.ModelCalled); ok && ev.SpanID == hex.EncodeToString(chat.span) {
			call = &p
		}
	}
	if call == nil || !strings.Contains(string(call.Input), "Route invoice INV-1000") || !strings.Contains(string(call.Output), "ap-standard") {
		t.Errorf("the chat span's (%x) model.called = %+v; want the user message and the choice from the logs signal", chat.span, call)
	}
}

// TestGRPCPerTokenFairness: over OTLP/gRPC too, one token holds at most MaxConcurrentPerToken
// calls: while a call of token "all" is in progress (JetStream down: it waits for its
// acknowledgements), the token's next call is refused RESOURCE_EXHAUSTED naming the token,
// though server-wide slots are free, and another token's call is admitted meanwhile.
func TestGRPCPerTokenFairness(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) {
		c.MaxConcurrent, c.MaxConcurrentPerToken = 4, 1
		c.AckTimeout, c.AdmitWait = 2*time.Second, 2*time.Second
		c.DisableSeenCheck = true
	})
	tc := coltracepb.NewTraceServiceClient(grpcClient(t, e))
	ctx := ctxT(t, 90*time.Second)
	req := mustDecode(t, payload(t, "genai.json"))
	e.nats.Stop()

	var exhausted error
	for attempt := 0; exhausted == nil; attempt++ {
		if attempt == 20 {
			t.Fatal("no call of token all was refused RESOURCE_EXHAUSTED while another of its calls was in progress")
		}
		first := make(chan error, 1)
		go func() { _, err := tc.Export(withToken(ctx, tokAll), req); first <- err }()
		deadline := time.Now().Add(5 * time.Second)
		for exhausted == nil && time.Now().Before(deadline) {
			select {
			case <-first:
				deadline = time.Time{} // the token's call ended: start over
				continue
			default:
			}
			if _, err := tc.Export(withToken(ctx, tokAll), req); status.Code(err) == codes.ResourceExhausted {
				exhausted = err
				// The first call still holds the token's one slot: another token is served.
				if _, err := tc.Export(withToken(ctx, tokProd), req); status.Code(err) == codes.ResourceExhausted {
					t.Errorf("token prod's call while token all holds its slot = %v; want it admitted", err)
				}
			}
		}
		if exhausted != nil {
			<-first
		}
	}
	if msg := status.Convert(exhausted).Message(); !strings.Contains(msg, "token all") {
		t.Errorf("RESOURCE_EXHAUSTED message %q does not name the token", msg)
	}
	// Its call over, the token is admitted again (and refused only because JetStream is down).
	if _, err := tc.Export(withToken(ctx, tokAll), req); status.Code(err) != codes.Unavailable {
		t.Errorf("token all's call after its other call ended = %v, want UNAVAILABLE (admitted, JetStream down)", err)
	}
}
