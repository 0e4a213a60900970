package otlpmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
)

// TestJSRecordings maps what the OpenTelemetry JS SDK really sent (recorded by the receiver's
// TestJSExportersIdenticalRows with -record-js: its OTLP/HTTP JSON exporters, a GenAI agent whose
// messages come as log records, and OpenInference's OpenAI instrumentation) and freezes the
// mapping in golden files, so that a change to the mapping of real payloads shows without node.
func TestJSRecordings(t *testing.T) {
	spans := load(t, "js_traces.json")
	raw, err := os.ReadFile(filepath.Join("testdata", "js_logs.json"))
	if err != nil {
		t.Fatal(err)
	}
	lreq, err := DecodeLogsJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	recs, bad := LogRecords(lreq)
	if len(bad) > 0 {
		t.Fatalf("LogRecords(js_logs.json) refused %v", bad)
	}
	var evs []GenAIEvent
	for _, r := range recs {
		back, err := DecodeLogRecord(r.Data)
		if err != nil {
			t.Fatalf("DecodeLogRecord() = %v", err)
		}
		evs = append(evs, back)
	}
	byTrace := map[string][]Span{}
	for _, s := range spans {
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	tests := []struct {
		name, trace, task, model string
		calls, tools, events     int
		finish, fingerprint      string
		seed                     int64
		toolCallIDs              string
		inputHas                 string
	}{
		{"js_genai", "c3000000000000000000000000000001", "refund-desk", "gpt-4o-mini", 2, 2, 7, "tool_calls", "fp_js_0042", 1234, "call_js_1", "You handle refunds."},
		{"js_openinference", "c3000000000000000000000000000002", "support-agent", "gpt-4o-mini-2024-07-18", 1, 0, 0, "tool_calls", "fp_ditto_0001", 7, "call_oi_1", "Where is order A-17?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := byTrace[tt.trace]
			if un := AttachEvents(tr, evs); len(evs)-len(un) != tt.events {
				t.Errorf("%d GenAI events joined to the trace's spans, want %d", len(evs)-len(un), tt.events)
			}
			for i := range tr {
				tr[i].Study = "prod"
			}
			res, err := MapTrace(tr, Config{Bucket: BucketNone}, true)
			if err != nil {
				t.Fatalf("MapTrace() = %v", err)
			}
			run, err := events.Fold(res.Events)
			if err != nil {
				t.Fatalf("Fold() = %v", err)
			}
			if run.Started.Task != tt.task || run.Started.Model != tt.model || run.ModelCalls != tt.calls || len(run.Tools) != tt.tools {
				t.Errorf("run (%s, %s) with %d calls, tools %q; want (%s, %s), %d calls, %d tools", run.Started.Task, run.Started.Model, run.ModelCalls, run.Tools, tt.task, tt.model, tt.calls, tt.tools)
			}
			var first *events.ModelCalled
			for _, e := range res.Events {
				if p, ok := e.Payload.(events.ModelCalled); ok {
					first = &p
					break
				}
			}
			if first == nil {
				t.Fatal("no model.called")
			}
			if first.FinishReason != tt.finish || first.Fingerprint != tt.fingerprint || first.Seed == nil || *first.Seed != tt.seed ||
				strings.Join(first.ToolCallIDs, ",") != tt.toolCallIDs || !strings.Contains(string(first.Input), tt.inputHas) {
				t.Errorf("first call = finish %q, fingerprint %q, seed %v, tool calls %q, input %s; want %q, %q, %d, %q, input with %q",
					first.FinishReason, first.Fingerprint, first.Seed, first.ToolCallIDs, first.Input, tt.finish, tt.fingerprint, tt.seed, tt.toolCallIDs, tt.inputHas)
			}
			checkGolden(t, tt.name, res)
		})
	}
}
