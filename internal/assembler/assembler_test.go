package assembler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/assembler"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/prometheus/client_golang/prometheus"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// records returns the span records of n GenAI traces (genai.json, 7 spans and 10 events each,
// with distinct trace ids), as the receiver stores them: subject, message id, data.
func records(t *testing.T, n int) (children, roots [][3]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "otlpmap", "testdata", "genai.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := otlpmap.DecodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		rs := proto.Clone(tmpl.ResourceSpans[0]).(*tracepb.ResourceSpans)
		for _, sp := range rs.ScopeSpans[0].Spans {
			sp.TraceId = []byte(fmt.Sprintf("as%014x", i+1))
		}
		recs, rej := otlpmap.Records(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{rs}})
		if len(rej) > 0 {
			t.Fatal(rej)
		}
		for _, r := range recs {
			kind := events.RecordSpan
			if r.Span.LocalRoot() {
				kind = events.RecordRoot
			}
			subj, err := events.SpanSubject("prod", r.Span.TraceID, kind)
			if err != nil {
				t.Fatal(err)
			}
			m := [3]string{subj, "prod." + r.Span.TraceID + "." + r.Span.SpanID, string(r.Data)}
			if kind == events.RecordRoot {
				roots = append(roots, m)
			} else {
				children = append(children, m)
			}
		}
	}
	return children, roots
}

func publish(t *testing.T, b *bus.Bus, msgs [][3]string) {
	t.Helper()
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range msgs {
		if err := p.Publish(ctx, m[0], m[1], []byte(m[2])); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// run starts an assembler on b until the test ends and returns its registry.
func run(t *testing.T, b *bus.Bus, cfg assembler.Config) *prometheus.Registry {
	t.Helper()
	a, err := assembler.New(b, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collectors()...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return reg
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func count(t *testing.T, b *bus.Bus, stream, filter string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Count(ctx, filter)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReplicasShareTheWork: two assemblers (two processes' connections) on one DITTO_SPANS
// assemble each trace once: one done marker per trace, every run's events stored, and the
// traces assembled add up to the traces sent.
func TestReplicasShareTheWork(t *testing.T) {
	ns := bustest.NewServer(t)
	b1, b2 := ns.Connect(t), ns.Connect(t)
	const n = 40
	children, roots := records(t, n)
	publish(t, b1, children)
	r1 := run(t, b1, assembler.Config{Workers: 2})
	r2 := run(t, b2, assembler.Config{Workers: 2})
	publish(t, b1, roots)
	poll(t, "every trace's run finished", func() bool {
		return count(t, b1, events.EventsStream, "ditto.events.prod.*."+string(events.TypeRunFinished)) == n
	})
	if got := count(t, b1, events.EventsStream, ""); got != 10*n {
		t.Errorf("DITTO_EVENTS holds %d events, want %d", got, 10*n)
	}
	if got := count(t, b1, events.SpansStream, events.SpanRecordsSubject(events.RecordDone)); got != n {
		t.Errorf("%d done markers, want one per trace (%d)", got, n)
	}
	// An assembler counts a run once JetStream has acknowledged all its events, so the count
	// can trail the events stored by the last run's acknowledgement (20 + 19 was seen in CI).
	runs := func() (float64, float64) {
		return counter(t, r1, "ditto_assembly_runs_total"), counter(t, r2, "ditto_assembly_runs_total")
	}
	poll(t, "every trace's assembly counted", func() bool { x, y := runs(); return x+y >= n })
	if runs1, runs2 := runs(); runs1+runs2 != n {
		t.Errorf("assembled %v + %v traces, want %d in all", runs1, runs2, n)
	}
}

// TestStragglerAfterAssembly: a span stored after its trace was assembled does not change the
// run (a second assembly maps the records the done marker bounds) and is counted as late.
func TestStragglerAfterAssembly(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	children, roots := records(t, 1)
	publish(t, b, children[1:]) // one child held back
	reg := run(t, b, assembler.Config{IdleTimeout: 200 * time.Millisecond})
	publish(t, b, roots)
	poll(t, "the run finished", func() bool {
		return count(t, b, events.EventsStream, "ditto.events.prod.*."+string(events.TypeRunFinished)) == 1
	})
	before := count(t, b, events.EventsStream, "")
	// The straggler starts the trace's idle timeout (its seen marker); the idle check finds the
	// trace done and counts it late.
	_, trace, _, err := events.ParseSpanSubject(children[0][0])
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := events.SpanSubject("prod", trace, events.RecordSeen)
	publish(t, b, [][3]string{children[0], {subj, "prod." + trace + ".seen", ""}})
	poll(t, "the straggler counted late", func() bool { return counter(t, reg, "ditto_assembly_late_traces_total") == 1 })
	if got := count(t, b, events.EventsStream, ""); got != before {
		t.Errorf("DITTO_EVENTS holds %d events after the straggler, want %d (the run unchanged)", got, before)
	}
}
