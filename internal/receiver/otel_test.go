package receiver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// agentRun records, with the OpenTelemetry Go SDK, the spans a GenAI-instrumented agent emits
// for one run: invoke_agent around a plan (with its own chat), chats and tool executions. The
// second tool fails on odd runs.
func agentRun(ctx context.Context, tracer trace.Tracer, i int) {
	ctx, root := tracer.Start(ctx, "invoke_agent invoice-triage", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "invoice-triage"),
		attribute.String("gen_ai.request.model", "gpt-4o-mini"),
		attribute.String("ditto.release", "r42"),
	))
	chat := func(ctx context.Context, in, out int64, finish string) {
		_, s := tracer.Start(ctx, "chat gpt-4o-mini", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "gpt-4o-mini"),
			attribute.String("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
			attribute.Int64("gen_ai.usage.input_tokens", in),
			attribute.Int64("gen_ai.usage.output_tokens", out),
			attribute.Int64("gen_ai.request.seed", 42),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{finish}),
		))
		s.End()
	}
	tool := func(ctx context.Context, name, id, args, result string, fail bool) {
		_, s := tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.call.id", id),
			attribute.String("gen_ai.tool.call.arguments", args),
		))
		if fail {
			s.SetStatus(codes.Error, "upstream timeout")
		} else {
			s.SetAttributes(attribute.String("gen_ai.tool.call.result", result))
		}
		s.End()
	}
	pctx, plan := tracer.Start(ctx, "plan", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "plan"),
		attribute.String("gen_ai.output.messages", "1. fetch the invoice 2. route it"),
	))
	chat(pctx, 200, 20, "stop")
	plan.End()
	chat(ctx, 300, 30, "tool_calls")
	tool(ctx, "fetch_invoice", "call_1", fmt.Sprintf(`{"invoice_id": "INV-%d"}`, i), `{"total": 10}`, false)
	chat(ctx, 400, 40, "tool_calls")
	tool(ctx, "route", "call_2", `{"queue":"ap"}`, `"ok"`, i%2 == 1)
	root.End()
}

// TestOpenTelemetrySDKExport is the acceptance test with a client no one here wrote: the
// OpenTelemetry Go SDK's OTLP/HTTP exporter sends GenAI spans to the server, and the runs,
// tool calls and tokens are found in JetStream, decoded and folded.
func TestOpenTelemetrySDKExport(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t, 60*time.Second)
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(e.ts.URL+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + tokProd}),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
	)
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "invoice-svc"), attribute.String("ditto.study", "prod"))
	// A small batch size makes the spans of one run travel in several export requests.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(3), sdktrace.WithBatchTimeout(50*time.Millisecond)))
	tracer := tp.Tracer("github.com/example/invoice-agent")
	const runs = 4
	for i := 0; i < runs; i++ {
		agentRun(ctx, tracer, i)
	}
	if err := tp.Shutdown(ctx); err != nil { // flushes and reports any export error
		t.Fatalf("TracerProvider.Shutdown() = %v", err)
	}
	got := waitFinished(t, e.bus, runs)
	if len(got) != runs {
		t.Fatalf("%d runs in the stream, want %d", len(got), runs)
	}
	for key, r := range got {
		if r.Study != "prod" || r.Started.Task != "invoice-triage" || r.Started.Model != "gpt-4o-mini" || r.Started.Condition != "r42" {
			t.Errorf("%s: cell (%s, %s, %s, %s), want (prod, invoice-triage, gpt-4o-mini, r42)", key, r.Study, r.Started.Task, r.Started.Model, r.Started.Condition)
		}
		if !slices.Equal(r.Tools, []string{"fetch_invoice", "route"}) {
			t.Errorf("%s: tools %q", key, r.Tools)
		}
		if r.PromptTokens != 900 || r.CompletionTokens != 90 || r.ModelCalls != 3 {
			t.Errorf("%s: tokens %d/%d in %d calls, want 900/90 in 3", key, r.PromptTokens, r.CompletionTokens, r.ModelCalls)
		}
		if r.Plan != "1. fetch the invoice 2. route it" {
			t.Errorf("%s: plan %q", key, r.Plan)
		}
		if len(r.Calls) != 2 || string(r.Calls[1].Args) != `{"queue":"ap"}` {
			t.Errorf("%s: calls %+v", key, r.Calls)
		}
		if r.Finished.Status != events.StatusSucceeded {
			t.Errorf("%s: status %s", key, r.Finished.Status)
		}
	}
	// Each trace id is a run: the run ids carry the day bucket and the trace id.
	for key := range got {
		if len(key) != len("prod/d20261130-")+32 {
			t.Errorf("run key %q is not prod/d<yyyymmdd>-<trace id>", key)
		}
	}
}

// TestOpenTelemetrySDKRemoteParent: an agent invoked with a propagated trace context (its
// invoke_agent span's parent lives in another service) is a complete run as soon as its spans
// are exported, not an incomplete trace waiting for a root that will never come.
func TestOpenTelemetrySDKRemoteParent(t *testing.T) {
	e := newEnv(t, nil) // trace idle timeout: the default 5 minutes
	ctx := ctxT(t, 30*time.Second)
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(e.ts.URL+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + tokProd}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	tid, _ := trace.TraceIDFromHex("0123456789abcdef0123456789abcdef")
	sid, _ := trace.SpanIDFromHex("0123456789abcdef")
	upstream := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	agentRun(trace.ContextWithRemoteSpanContext(ctx, upstream), tp.Tracer("agent"), 0)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	runs := waitFinished(t, e.bus, 1)
	for k, r := range runs {
		if r.Finished.Status != events.StatusSucceeded || len(r.Tools) != 2 || !strings.HasSuffix(k, "0123456789abcdef0123456789abcdef") {
			t.Errorf("%s finished %s with tools %q, want the trace's run, succeeded, 2 tools", k, r.Finished.Status, r.Tools)
		}
	}
}
