//go:build cgo

package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/assembler"
	"github.com/dittolab/ditto/internal/otlpmap"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

var recordJS = flag.Bool("record-js", false, "rewrite the JS SDK recordings in ../otlpmap/testdata/js_*.json")

// jsDir holds the Node.js script that drives the OpenTelemetry JS SDK, with its package.json and
// package-lock.json (node_modules is installed from the lock file, not committed).
const jsDir = "testdata/jsotel"

// requireNode returns node's path, installing the script's packages with npm ci when they are
// missing. Without node (or npm's registry) the test is skipped, except under CI=true, where
// node is part of the environment and its absence is a failure.
func requireNode(t *testing.T) string {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node not found: %v", err)
	}
	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "@opentelemetry", "sdk-trace-base")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = jsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			skip("npm ci in %s: %v\n%s", jsDir, err, out)
		}
	}
	return node
}

// runJS runs export.cjs with one protocol against endpoint.
func runJS(t *testing.T, node, protocol, endpoint, traceByte string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "export.cjs")
	cmd.Dir = jsDir
	cmd.Env = append(os.Environ(), "DITTO_PROTOCOL="+protocol, "DITTO_ENDPOINT="+endpoint, "DITTO_TOKEN="+tokAll, "DITTO_TRACE_BYTE="+traceByte)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node export.cjs (%s): %v\n%s", protocol, err, out)
	} else if len(out) > 0 {
		t.Logf("node export.cjs (%s):\n%s", protocol, out)
	}
}

// recorder keeps the OTLP/JSON bodies a handler receives, to write them as recordings.
type recorder struct {
	next   http.Handler
	mu     sync.Mutex
	traces coltracepb.ExportTraceServiceRequest
	logs   collogspb.ExportLogsServiceRequest
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	switch req.URL.Path {
	case "/v1/traces":
		var one coltracepb.ExportTraceServiceRequest
		if protojson.Unmarshal(body, &one) == nil {
			r.traces.ResourceSpans = append(r.traces.ResourceSpans, one.ResourceSpans...)
		}
	case "/v1/logs":
		var one collogspb.ExportLogsServiceRequest
		if protojson.Unmarshal(body, &one) == nil {
			r.logs.ResourceLogs = append(r.logs.ResourceLogs, one.ResourceLogs...)
		}
	}
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.next.ServeHTTP(w, req)
}

func (r *recorder) write(t *testing.T) {
	t.Helper()
	enc := protojson.MarshalOptions{Multiline: true, Indent: " "}
	for name, b := range map[string]func() ([]byte, error){
		"js_traces.json": func() ([]byte, error) { return enc.Marshal(&r.traces) },
		"js_logs.json":   func() ([]byte, error) { return enc.Marshal(&r.logs) },
	} {
		raw, err := b()
		if err != nil {
			t.Fatal(err)
		}
		// protojson's output is not stable byte for byte; a round trip through encoding/json is.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		raw, _ = json.MarshalIndent(v, "", " ")
		if err := os.WriteFile(filepath.Join("..", "otlpmap", "testdata", name), append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJSExportersIdenticalRows is the acceptance test with the OpenTelemetry JS SDK: its gRPC
// exporters, its OTLP/HTTP protobuf exporters and its OTLP/HTTP JSON exporters each send the
// same two agent traces (a GenAI one whose prompts and completions come as GenAI events on the
// logs signal, and an OpenInference one recorded by the OpenAI instrumentation); the runs,
// model calls and tool calls in DuckDB are the same row for row whichever transport carried
// them, and the GenAI events landed on their calls.
func TestJSExportersIdenticalRows(t *testing.T) {
	node := requireNode(t)
	e := newEnvAsm(t, nil, func(c *assembler.Config) {
		c.Grace = 3 * time.Second // the logs exporter flushes after the trace exporter
		c.Mapping.Bucket = otlpmap.BucketNone
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := e.srv.GRPCServer()
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	rec := &recorder{next: e.srv.Handler()}
	jsonTS := httptest.NewServer(rec)
	t.Cleanup(jsonTS.Close)

	protocols := []struct{ name, endpoint, traceByte string }{
		{"grpc", "http://" + ln.Addr().String(), "a1"},
		{"http-proto", e.ts.URL, "b2"},
		{"http-json", jsonTS.URL, "c3"},
	}
	for _, p := range protocols {
		runJS(t, node, p.name, p.endpoint, p.traceByte)
	}
	if *recordJS {
		rec.write(t)
	}
	waitFinished(t, e.bus, 2*len(protocols))

	ctx := ctxT(t, 2*time.Minute)
	w := caughtUp(ctx, t, e.bus)
	// Rows of each protocol, keyed by the trace id's first byte; times and latencies are left
	// out (the OpenInference spans carry the instrumentation's own clock).
	queries := map[string]string{
		"runs": `SELECT left(run, 2) AS p, right(run, 2) AS k, task, model, condition, status, success, tool_calls, prompt_tokens, completion_tokens
			FROM runs WHERE study = 'production' ORDER BY k`,
		"model_calls": `SELECT left(run, 2) AS p, right(run, 2) AS k, seq, model, purpose, prompt_tokens, completion_tokens, finish_reason,
			fingerprint, seed, error, response_model, temperature, top_p, CAST(tool_call_ids AS VARCHAR), input, output
			FROM model_calls WHERE study = 'production' ORDER BY k, seq`,
		"tool_calls": `SELECT left(run, 2) AS p, right(run, 2) AS k, seq, call_id, tool, args, ok, result, error
			FROM tool_calls WHERE study = 'production' ORDER BY k, seq`,
	}
	rowsOf := map[string]map[string][]string{} // table -> protocol byte -> rows
	for table, q := range queries {
		rows, err := w.DB().QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, _ := rows.Columns()
		rowsOf[table] = map[string][]string{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			p := fmt.Sprint(vals[0])
			rowsOf[table][p] = append(rowsOf[table][p], fmt.Sprint(vals[1:]...))
		}
		rows.Close()
	}
	want := map[string]int{"runs": 2, "model_calls": 3, "tool_calls": 2}
	for table, byProto := range rowsOf {
		ref := byProto[protocols[0].traceByte]
		if len(ref) != want[table] {
			t.Errorf("%s: %d rows from %s, want %d: %q", table, len(ref), protocols[0].name, want[table], ref)
		}
		for _, p := range protocols[1:] {
			if got := byProto[p.traceByte]; strings.Join(got, "\n") != strings.Join(ref, "\n") {
				t.Errorf("%s rows from %s differ from %s's:\n%s\nwant\n%s", table, p.name, protocols[0].name, strings.Join(got, "\n"), strings.Join(ref, "\n"))
			}
		}
	}

	// What the instrumentations sent is in the rows: the agent span's name as the task, the
	// call details of both vocabularies, the GenAI log events as the calls' input and output,
	// the failing tool's exception.
	one := func(q string, dst ...any) {
		t.Helper()
		if err := w.DB().QueryRowContext(ctx, q).Scan(dst...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var task, oiTask string
	one(`SELECT task FROM runs WHERE run = 'a1000000000000000000000000000001'`, &task)
	one(`SELECT task FROM runs WHERE run = 'a1000000000000000000000000000002'`, &oiTask)
	if task != "refund-desk" || oiTask != "support-agent" {
		t.Errorf("tasks = %q, %q; want refund-desk (gen_ai.agent.name), support-agent (the AGENT span's name)", task, oiTask)
	}
	var finish, fp, rmodel, ids, input, output string
	var seed int64
	var temp, topP float64
	one(`SELECT finish_reason, fingerprint, seed, response_model, temperature, top_p, CAST(tool_call_ids AS VARCHAR), input, output
		FROM model_calls WHERE run = 'a1000000000000000000000000000001' ORDER BY seq LIMIT 1`, &finish, &fp, &seed, &rmodel, &temp, &topP, &ids, &input, &output)
	if finish != "tool_calls" || fp != "fp_js_0042" || seed != 1234 || rmodel != "gpt-4o-mini-2024-07-18" || temp != 0.2 || topP != 0.9 || ids != "[call_js_1]" {
		t.Errorf("GenAI call = %s %s %d %s %v %v %s; want tool_calls fp_js_0042 1234 gpt-4o-mini-2024-07-18 0.2 0.9 [call_js_1]", finish, fp, seed, rmodel, temp, topP, ids)
	}
	if !strings.Contains(input, "You handle refunds.") || !strings.Contains(input, "Refund order A-1") || !strings.Contains(output, "order_status") {
		t.Errorf("GenAI call input %s, output %s: want the system and user messages and the choice's tool call (GenAI log events)", input, output)
	}
	one(`SELECT finish_reason, fingerprint, seed, response_model, CAST(tool_call_ids AS VARCHAR)
		FROM model_calls WHERE run = 'a1000000000000000000000000000002'`, &finish, &fp, &seed, &rmodel, &ids)
	if finish != "tool_calls" || fp != "fp_ditto_0001" || seed != 7 || rmodel != "gpt-4o-mini-2024-07-18" || ids != "[call_oi_1]" {
		t.Errorf("OpenInference call = %s %s %d %s %s; want tool_calls fp_ditto_0001 7 gpt-4o-mini-2024-07-18 [call_oi_1]", finish, fp, seed, rmodel, ids)
	}
	var toolErr string
	one(`SELECT error FROM tool_calls WHERE run = 'a1000000000000000000000000000001' AND tool = 'issue_refund' AND NOT ok`, &toolErr)
	if toolErr != "Error: payment gateway timeout" {
		t.Errorf("failing tool's error = %q, want the exception's type and message", toolErr)
	}
}
