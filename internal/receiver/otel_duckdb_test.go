//go:build cgo

package receiver_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestOpenTelemetrySDKExportInDuckDB is the acceptance test as the issue states it: spans
// exported by the OpenTelemetry Go SDK end up as runs, tool calls and tokens in DuckDB (the
// analyzer's warehouse, caught up from the stream). It needs cgo (DuckDB); the ingestion server
// itself does not.
func TestOpenTelemetrySDKExportInDuckDB(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t, 90*time.Second)
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(e.ts.URL+"/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + tokProd}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "invoice-svc"))))
	const runs = 3
	for i := 0; i < runs; i++ {
		agentRun(ctx, tp.Tracer("agent"), i)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, e.bus, runs)

	w := caughtUp(ctx, t, e.bus)
	var n, prompt, completion, tools int64
	row := w.DB().QueryRowContext(ctx, `SELECT count(*), sum(prompt_tokens), sum(completion_tokens), sum(tool_calls)
		FROM runs WHERE study = 'prod' AND source_kind = 'production' AND task = 'invoice-triage'
		AND model = 'gpt-4o-mini' AND condition = 'r42' AND status = 'succeeded'
		AND fold_error IS NULL AND check_error IS NULL`)
	if err := row.Scan(&n, &prompt, &completion, &tools); err != nil {
		t.Fatal(err)
	}
	if n != runs || prompt != runs*900 || completion != runs*90 || tools != runs*2 {
		t.Errorf("DuckDB runs: %d runs, %d/%d tokens, %d tool calls; want %d, %d/%d, %d", n, prompt, completion, tools, runs, runs*900, runs*90, runs*2)
	}
	var failed int64
	if err := w.DB().QueryRowContext(ctx, `SELECT count(*) FROM tool_calls WHERE study = 'prod' AND tool = 'route' AND ok = false AND error = 'upstream timeout'`).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if failed != 1 { // runs 1 (of 0, 1, 2) fails its route call
		t.Errorf("failed route calls in DuckDB = %d, want 1", failed)
	}
	// The README's per-window query: one window, one cell, all runs.
	var day string
	var perWindow int64
	if err := w.DB().QueryRowContext(ctx, `SELECT split_part(run, '-', 1) AS day, count(*) AS runs
		FROM runs WHERE source_kind = 'production' AND last_attempt AND status <> 'incomplete'
		GROUP BY ALL`).Scan(&day, &perWindow); err != nil {
		t.Fatal(err)
	}
	if perWindow != runs || len(day) != len("d20261130") || day[0] != 'd' {
		t.Errorf("per-window query = (%q, %d), want (d<yyyymmdd>, %d)", day, perWindow, runs)
	}
	var rejected int64
	if err := w.DB().QueryRowContext(ctx, `SELECT count(*) FROM rejected_events`).Scan(&rejected); err != nil {
		t.Fatal(err)
	}
	if rejected != 0 {
		t.Errorf("the warehouse rejected %d mapped events", rejected)
	}
}
