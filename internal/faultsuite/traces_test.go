package faultsuite

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// serveReady is what producer serve logs once it listens.
const serveReady = "producer serve: listening"

// agentTrace is one agent run as an OpenTelemetry SDK exports it: the children (two chats and a
// tool call) in one export, the root (invoke_agent, which ends last) in a later one.
type agentTrace struct {
	children, root []byte // OTLP/protobuf ExportTraceServiceRequest bodies
	spans          []string
	rootSpan       string
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func kvInt(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// newAgentTrace builds trace i of study (ids derived from i, never zero).
func newAgentTrace(t *testing.T, study string, i int) agentTrace {
	t.Helper()
	tid := make([]byte, 16)
	binary.BigEndian.PutUint64(tid, 0xd1770)
	binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
	sid := func(k int) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(i+1)<<8|uint64(k))
		return b
	}
	t0 := uint64(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).UnixNano()) + uint64(i)*uint64(time.Second)
	at := func(ms int) uint64 { return t0 + uint64(ms)*uint64(time.Millisecond) }
	root := &tracepb.Span{TraceId: tid, SpanId: sid(1), Name: "invoke_agent triage", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: at(0), EndTimeUnixNano: at(100),
		Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "invoke_agent"), kv("gen_ai.agent.name", "triage"), kv("gen_ai.request.model", "m-1")}}
	chat := func(k, from int) *tracepb.Span {
		return &tracepb.Span{TraceId: tid, SpanId: sid(k), ParentSpanId: sid(1), Name: "chat m-1", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: at(from), EndTimeUnixNano: at(from + 10),
			Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "m-1"),
				kvInt("gen_ai.usage.input_tokens", 100), kvInt("gen_ai.usage.output_tokens", 10)}}
	}
	tool := &tracepb.Span{TraceId: tid, SpanId: sid(3), ParentSpanId: sid(1), Name: "execute_tool lookup",
		StartTimeUnixNano: at(30), EndTimeUnixNano: at(40),
		Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "execute_tool"), kv("gen_ai.tool.name", "lookup"),
			kv("gen_ai.tool.call.id", "call_1"), kv("gen_ai.tool.call.arguments", fmt.Sprintf(`{"n":%d}`, i)), kv("gen_ai.tool.call.result", `"ok"`)}}
	export := func(spans ...*tracepb.Span) []byte {
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "triage-svc"), kv("ditto.study", study)}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "faulttest"}, Spans: spans}},
		}}}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hex := func(b []byte) string { return fmt.Sprintf("%x", b) }
	return agentTrace{
		children: export(chat(2, 10), tool, chat(4, 50)),
		root:     export(root),
		spans:    []string{hex(sid(1)), hex(sid(2)), hex(sid(3)), hex(sid(4))},
		rootSpan: hex(sid(1)),
	}
}

// replica is one producer serve process behind the test's client, restarted on a fixed port.
type replica struct {
	t        *testing.T
	b        *bins
	dir, url string
	name     string
	port     int
	starts   int
	mu       sync.Mutex
	p        *proc
}

func (r *replica) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	// A new log per start: startReady counts its marker in the log.
	r.p = startReady(r.t, r.dir, fmt.Sprintf("%s-%d", r.name, r.starts), r.b.producer, nil, serveReady,
		"serve", "--nats-url", r.url, "--addr", fmt.Sprintf("127.0.0.1:%d", r.port), "--grpc-addr", "off",
		"--insecure-no-auth", "--trace-grace", "0s", "--bucket", "none")
}

func (r *replica) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.kill()
}

// TestServeKilledWhileTracesStreamIn: producer serve is SIGKILLed (and restarted) while agent
// traces stream in with their roots last, through one replica and through two behind one client
// that alternates between them. Every span answered 200 is in DuckDB afterwards, once: an
// answered span is in DITTO_SPANS, and a trace whose assembly a kill interrupted is assembled
// again (its root is delivered again) by whichever replica is up.
func TestServeKilledWhileTracesStreamIn(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) { serveKilled(t, n) })
	}
}

func serveKilled(t *testing.T, replicas int) {
	b := build(t)
	dir := testDir(t)
	_, url := single(t, b, dir)
	obs := connect(t, url)
	study := fmt.Sprintf("fault-traces-%d", replicas)

	reps := make([]*replica, replicas)
	for i := range reps {
		reps[i] = &replica{t: t, b: b, dir: dir, url: url, name: fmt.Sprintf("serve%d", i), port: freePort(t)}
		reps[i].start()
	}

	const traces, clients = 240, 4
	all := make([]agentTrace, traces)
	for i := range all {
		all[i] = newAgentTrace(t, study, i)
	}
	var answered sync.Map // span id -> true, for spans answered 200
	var sent, refused atomic.Int64
	hc := &http.Client{Timeout: 15 * time.Second}
	post := func(k int64, body []byte) {
		for attempt := 0; ; attempt++ {
			r := reps[(int(k)+attempt)%len(reps)] // alternate; a refused request goes to the next replica
			resp, err := hc.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/traces", r.port), "application/x-protobuf", bytes.NewReader(body))
			if err == nil {
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					var er coltracepb.ExportTraceServiceResponse
					if err := proto.Unmarshal(raw, &er); err != nil || er.GetPartialSuccess().GetRejectedSpans() != 0 {
						t.Errorf("export answered 200 with %v (%v), want no rejection", er.GetPartialSuccess(), err)
					}
					return
				}
				err = fmt.Errorf("status %d: %s", resp.StatusCode, raw)
			}
			refused.Add(1)
			if attempt == 600 {
				t.Errorf("export refused 600 times; last: %v", err)
				return
			}
			time.Sleep(50 * time.Millisecond) // an exporter's back-off, shortened
		}
	}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; i < traces; i += clients {
				tr := all[i]
				post(sent.Add(1), tr.children)
				for _, s := range tr.spans[1:] {
					answered.Store(s, true)
				}
				post(sent.Add(1), tr.root)
				answered.Store(tr.rootSpan, true)
			}
		}(c)
	}
	// Kill a replica three times while the traces stream in (alternating which one), each time
	// once more exports were answered, and restart it at once.
	for k := 1; k <= 3; k++ {
		poll(t, 2*time.Minute, "more exports answered", func() (bool, error) {
			return sent.Load() >= int64(k*2*traces/4), nil
		})
		r := reps[k%len(reps)]
		r.kill()
		t.Logf("%s killed after %d exports sent", r.name, sent.Load())
		r.start()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d exports answered 200; %d refused and retried (a replica down)", 2*traces, refused.Load())

	// Every trace becomes one finished run (a root whose assembly a kill interrupted is
	// delivered again after the assembler's ack wait, 30 s).
	poll(t, 3*time.Minute, "every trace assembled", func() (bool, error) {
		n, err := subjectCount(t, obs, events.EventsStream, fmt.Sprintf("ditto.events.%s.*.%s", study, events.TypeRunFinished))
		return err == nil && n >= traces, err
	})
	db := filepath.Join(dir, "ditto.duckdb")
	analyzer := start(t, dir, "analyzer", b.analyzer, nil, "ingest", "--nats-url", url, "--data-dir", dir, "--db", db)
	waitCaughtUp(t, obs)
	if err := analyzer.stop(30 * time.Second); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	c := dbCounts(t, db, study)
	c.StreamEvents = streamCount(t, obs, study)
	checkExactlyOnce(t, c, c.StreamEvents)
	if c.Runs != traces || c.Finished != traces || c.Aborted != 0 || c.Incomplete != 0 {
		t.Errorf("runs %d, finished %d, aborted %d, incomplete %d: want %d runs, each finished once", c.Runs, c.Finished, c.Aborted, c.Incomplete, traces)
	}
	checkSpansInDuckDB(t, db, study, &answered, traces)
}

// checkSpansInDuckDB fails unless every answered span has its events in DuckDB and none is
// there twice: each chat one model.called, the tool one tool.called, the root one run.started.
func checkSpansInDuckDB(t *testing.T, db, study string, answered *sync.Map, traces int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: db, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows, err := w.DB().QueryContext(ctx, `SELECT span_id, count(*) FILTER (WHERE type IN ('model.called', 'tool.called', 'run.started')) AS n,
		count(*) - count(DISTINCT type) AS dup FROM events WHERE study = ? GROUP BY span_id`, study)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	inDB := map[string]int64{}
	for rows.Next() {
		var span string
		var n, dup int64
		if err := rows.Scan(&span, &n, &dup); err != nil {
			t.Fatal(err)
		}
		inDB[span] = n
		if dup != 0 {
			t.Errorf("span %s: %d events of a type stored twice", span, dup)
		}
	}
	missing, spans := 0, 0
	answered.Range(func(k, _ any) bool {
		spans++
		if inDB[k.(string)] != 1 {
			missing++
			if missing <= 5 {
				t.Errorf("span %s answered 200: %d of its first events in DuckDB, want 1", k, inDB[k.(string)])
			}
		}
		return true
	})
	if spans != 4*traces || missing != 0 {
		t.Errorf("%d spans answered, %d not in DuckDB exactly once; want %d answered, all in DuckDB", spans, missing, 4*traces)
	}
	fmt.Printf("TRACES %s: %d spans answered 200, %d of them in DuckDB exactly once\n", t.Name(), spans, spans-missing)
}
