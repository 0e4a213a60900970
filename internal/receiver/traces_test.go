package receiver_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/assembler"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/dittolab/ditto/internal/receiver"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// payload reads a recorded OTLP/JSON payload of the mapping tests.
func payload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "otlpmap", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asProto re-encodes a recorded OTLP/JSON payload as protobuf.
func asProto(t *testing.T, js []byte) []byte {
	t.Helper()
	req, err := otlpmap.DecodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exportResp(t *testing.T, asJSON bool, b []byte) *coltracepb.ExportTraceServiceResponse {
	t.Helper()
	var r coltracepb.ExportTraceServiceResponse
	var err error
	if asJSON {
		err = protojson.Unmarshal(b, &r)
	} else {
		err = proto.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("response is not an ExportTraceServiceResponse: %v (%q)", err, b)
	}
	return &r
}

func TestTracesVocabulariesBothEncodings(t *testing.T) {
	e := newEnvAsm(t, nil, func(c *assembler.Config) { c.Mapping.Bucket = otlpmap.BucketNone })
	files := []string{"genai.json", "openinference.json", "openllmetry.json", "missing_attrs.json", "unknown_kinds.json", "nested_agents.json"}
	for i, f := range files {
		body, ctype := payload(t, f), "application/json"
		if i%2 == 1 {
			body, ctype = asProto(t, body), "application/x-protobuf"
		}
		resp, raw := e.post(t, "/v1/traces", tokAll, ctype, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: POST = %d %q", f, resp.StatusCode, raw)
		}
		if r := exportResp(t, ctype == "application/json", raw); r.GetPartialSuccess().GetRejectedSpans() != 0 {
			t.Errorf("%s: partial success %v", f, r.PartialSuccess)
		}
		if got := resp.Header.Get("Content-Type"); got != ctype {
			t.Errorf("%s: answered in %s, want %s", f, got, ctype)
		}
	}
	runs := waitFinished(t, e.bus, 6)
	want := map[string][]string{
		"production/5b8efff798038103d269b633813fc60c": {"fetch_invoice", "route"},
		"production/1f2e3d4c5b6a79880011223344556677": {"calculator"},
		"production/a1a2a3a4a5a6a7a8b1b2b3b4b5b6b7b8": {"close_ticket"},
		"production/fedcba9876543210fedcba9876543210": {"unknown", "unknown", "x"},
		"production/99999999999999998888888888888888": {"audit", "orphan"},
		"production/77777777777777776666666666666666": {"search"},
	}
	if len(runs) != len(want) {
		t.Errorf("%d runs stored, want %d", len(runs), len(want))
	}
	for k, tools := range want {
		r := runs[k]
		if r == nil || !r.Done() || strings.Join(r.Tools, ",") != strings.Join(tools, ",") {
			t.Errorf("run %s = %+v, want finished with tools %q", k, r, tools)
		}
	}
}

func TestTracesAcrossRequestsAndIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	resp, raw := e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "split_part1.json"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("part 1 = %d %q", resp.StatusCode, raw)
	}
	// Answered 200: the spans are in DITTO_SPANS (and the trace's seen marker), no run yet.
	if n := spanRecords(t, e.bus); n != 3 {
		t.Fatalf("DITTO_SPANS holds %d records after part 1, want its 2 spans and the seen marker", n)
	}
	if n := streamCount(t, e.bus); n != 0 {
		t.Fatalf("%d events stored before the root span arrived, want 0", n)
	}
	resp, _ = e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "split_part2.json"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("part 2 = %d", resp.StatusCode)
	}
	runs := waitFinished(t, e.bus, 1)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	for _, r := range runs {
		if r.ModelCalls != 2 || len(r.Tools) != 1 || r.PromptTokens != 30 {
			t.Errorf("run = %d model calls, tools %q, %d prompt tokens; want 2, [lookup], 30", r.ModelCalls, r.Tools, r.PromptTokens)
		}
	}
	before, records := streamCount(t, e.bus), spanRecords(t, e.bus)
	// A re-export (an exporter's retry after a lost answer, to this server or to a restarted
	// one) stores nothing new: the records' message ids come from the trace and span ids.
	for range 2 {
		for _, f := range []string{"split_part1.json", "split_part2.json"} {
			resp, raw = e.post(t, "/v1/traces", tokAll, "application/json", payload(t, f))
			if r := exportResp(t, true, raw); resp.StatusCode != http.StatusOK || r.GetPartialSuccess() != nil {
				t.Errorf("re-export of %s = %d %v, want 200 without rejections", f, resp.StatusCode, r.PartialSuccess)
			}
		}
		e.start(t, nil)
	}
	if n := spanRecords(t, e.bus); n != records {
		t.Errorf("DITTO_SPANS holds %d records after re-exports, want %d", n, records)
	}
	if n := streamCount(t, e.bus); n != before {
		t.Errorf("stream holds %d events after re-exports, want %d", n, before)
	}
}

func TestTracesBadInput(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) { c.MaxBodyBytes = 1 << 20 })
	genai := payload(t, "genai.json")
	badIDs := strings.Replace(string(genai), `"spanId": "a000000000000002"`, `"spanId": "a0000000000000"`, 1)
	tests := []struct {
		name, token, ctype string
		body               []byte
		want               int
	}{
		{"malformed protobuf", tokAll, "application/x-protobuf", []byte{0x0a, 0xff, 0xff, 0x01}, http.StatusBadRequest},
		{"malformed json", tokAll, "application/json", []byte(`{"resourceSpans": [`), http.StatusBadRequest},
		{"wrong content type", tokAll, "text/plain", genai, http.StatusUnsupportedMediaType},
		{"no token", "", "application/json", genai, http.StatusUnauthorized},
		{"wrong token", "wrong-token-wrong-token", "application/x-protobuf", asProto(t, genai), http.StatusUnauthorized},
		{"oversize", tokAll, "application/x-protobuf", make([]byte, 2<<20), http.StatusRequestEntityTooLarge},
		{"forbidden study", tokProd, "application/json", []byte(strings.Replace(string(genai), `"service.name"`, `"ditto.study", "value": {"stringValue": "other"}}, {"key": "x"`, 1)), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := e.post(t, "/v1/traces", tt.token, tt.ctype, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d %q, want %d", resp.StatusCode, raw, tt.want)
			}
			var st spb.Status
			var err error
			if resp.Header.Get("Content-Type") == "application/json" {
				err = protojson.Unmarshal(raw, &st)
			} else {
				err = proto.Unmarshal(raw, &st)
			}
			if err != nil || st.GetMessage() == "" {
				t.Errorf("error body %q is not a google.rpc.Status with a message (%v)", raw, err)
			}
		})
	}
	// One span with a bad id: the others are accepted, the bad one counted in partial_success.
	resp, raw := e.post(t, "/v1/traces", tokAll, "application/json", []byte(badIDs))
	r := exportResp(t, true, raw)
	if resp.StatusCode != http.StatusOK || r.GetPartialSuccess().GetRejectedSpans() != 1 {
		t.Fatalf("one bad span id = %d %v, want 200 with 1 rejected span", resp.StatusCode, r.PartialSuccess)
	}
	runs := waitFinished(t, e.bus, 1)
	if len(runs) != 1 {
		t.Fatalf("%d runs stored, want 1", len(runs))
	}
	for _, run := range runs {
		if run.ModelCalls != 2 { // of 3 chats, the one with the bad id is gone
			t.Errorf("run has %d model calls, want 2", run.ModelCalls)
		}
	}
	// The server keeps serving.
	if resp, _ := e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "openinference.json")); resp.StatusCode != http.StatusOK {
		t.Errorf("good export after bad ones = %d", resp.StatusCode)
	}
}

func TestTracesIncompleteFlushedAsAborted(t *testing.T) {
	e := newEnvAsm(t, nil, func(c *assembler.Config) { c.IdleTimeout = 100 * time.Millisecond })
	if resp, _ := e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "split_part1.json")); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST = %d", resp.StatusCode)
	}
	runs := waitFinished(t, e.bus, 1)
	for k, r := range runs {
		if r.Finished.Status != "aborted" || r.ModelCalls != 1 {
			t.Errorf("%s finished %s with %d model calls, want aborted with 1", k, r.Finished.Status, r.ModelCalls)
		}
	}
}

// TestTracesRootFirstWithGrace: with a grace period, children exported after their root (spans
// of one trace from several processes) still join the run. The grace is counted from the
// root's storing, so the children's POST must be handled within it: 200 ms was a window a
// loaded machine could miss; 3 s is the one TestJSExportersIdenticalRows gives.
func TestTracesRootFirstWithGrace(t *testing.T) {
	e := newEnvAsm(t, nil, func(c *assembler.Config) { c.Grace = 3 * time.Second })
	for _, f := range []string{"split_part2.json", "split_part1.json"} { // root first
		if resp, raw := e.post(t, "/v1/traces", tokAll, "application/json", payload(t, f)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", f, resp.StatusCode, raw)
		}
	}
	for k, r := range waitFinished(t, e.bus, 1) {
		if r.ModelCalls != 2 || len(r.Tools) != 1 || r.Finished.Status != "succeeded" {
			t.Errorf("%s: %d model calls, tools %q, %s; want 2, [lookup], succeeded", k, r.ModelCalls, r.Tools, r.Finished.Status)
		}
	}
}

func TestTracesUnsafeStudyAttribute(t *testing.T) {
	e := newEnv(t, nil)
	body := strings.Replace(string(payload(t, "genai.json")), `"key": "gen_ai.operation.name",`, `"key": "ditto.study", "value": {"stringValue": "a.b"}}, {"key": "gen_ai.operation.name",`, 1)
	resp, raw := e.post(t, "/v1/traces", tokAll, "application/json", []byte(body))
	r := exportResp(t, true, raw)
	if resp.StatusCode != http.StatusOK || r.GetPartialSuccess().GetRejectedSpans() != 1 || !strings.Contains(r.GetPartialSuccess().GetErrorMessage(), "unsafe") {
		t.Errorf("span with ditto.study=a.b: %d %v, want 200 with 1 rejected as unsafe", resp.StatusCode, r.PartialSuccess)
	}
}

// TestTracesNotAgentPartialSuccess: a trace with no agent span is refused, and the answer says
// so (partial_success with the count and the reason), on both encodings; nothing of it is
// stored. In an export mixing it with an agent trace only its spans are refused.
func TestTracesNotAgentPartialSuccess(t *testing.T) {
	e := newEnv(t, nil)
	plain := payload(t, "no_genai.json")
	nPlain := len(mustDecode(t, plain).GetResourceSpans()[0].GetScopeSpans()[0].GetSpans())
	for _, asJSON := range []bool{true, false} {
		body, ctype := plain, "application/json"
		if !asJSON {
			body, ctype = asProto(t, plain), "application/x-protobuf"
		}
		resp, raw := e.post(t, "/v1/traces", tokAll, ctype, body)
		ps := exportResp(t, asJSON, raw).GetPartialSuccess()
		if resp.StatusCode != http.StatusOK || ps.GetRejectedSpans() != int64(nPlain) || !strings.Contains(ps.GetErrorMessage(), "agent span") {
			t.Errorf("non-agent trace (json %v) = %d %v, want 200 with %d spans rejected as not agent spans", asJSON, resp.StatusCode, ps, nPlain)
		}
	}
	if n := spanRecords(t, e.bus); n != 0 {
		t.Errorf("DITTO_SPANS holds %d records of a refused trace, want 0", n)
	}
	mixed := mustDecode(t, payload(t, "genai.json"))
	mixed.ResourceSpans = append(mixed.ResourceSpans, mustDecode(t, plain).ResourceSpans...)
	body, _ := protojson.Marshal(mixed)
	resp, raw := e.post(t, "/v1/traces", tokAll, "application/json", body)
	if ps := exportResp(t, true, raw).GetPartialSuccess(); resp.StatusCode != http.StatusOK || ps.GetRejectedSpans() != int64(nPlain) {
		t.Errorf("mixed export = %d %v, want 200 with the %d plain spans rejected", resp.StatusCode, ps, nPlain)
	}
	if runs := waitFinished(t, e.bus, 1); len(runs) != 1 {
		t.Errorf("%d runs from the mixed export, want the agent trace's", len(runs))
	}
	if got := counterSum(t, e.srv.Registry(), "ditto_ingest_spans_rejected_total"); got != float64(3*nPlain) {
		t.Errorf("ditto_ingest_spans_rejected_total = %v, want %d", got, 3*nPlain)
	}
}

func mustDecode(t *testing.T, js []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req, err := otlpmap.DecodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
