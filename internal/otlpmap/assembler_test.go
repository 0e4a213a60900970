package otlpmap

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func TestAssemblerReleasesWhenRootArrives(t *testing.T) {
	a := NewAssembler(AssemblerConfig{})
	ready, rej, err := a.Add(load(t, "split_part1.json"), t0)
	if err != nil || len(rej) > 0 || len(ready) != 0 {
		t.Fatalf("Add(children) = %d ready, %v, %v; want nothing ready", len(ready), rej, err)
	}
	if traces, spans := a.Stats(); traces != 1 || spans != 2 {
		t.Errorf("Stats() = %d, %d, want 1, 2", traces, spans)
	}
	// The exporter retries the first batch: nothing is buffered twice.
	if _, _, err := a.Add(load(t, "split_part1.json"), t0); err != nil {
		t.Fatal(err)
	}
	ready, _, err = a.Add(load(t, "split_part2.json"), t0.Add(time.Second))
	if err != nil || len(ready) != 1 {
		t.Fatalf("Add(root) = %d ready, %v; want 1", len(ready), err)
	}
	if got := len(ready[0].Spans); got != 4 || !ready[0].Complete {
		t.Errorf("released trace has %d spans (complete %v), want 4 complete", got, ready[0].Complete)
	}
	if traces, spans := a.Stats(); traces != 0 || spans != 0 {
		t.Errorf("Stats() after release = %d, %d, want 0, 0", traces, spans)
	}
	// A straggler of a released trace is refused, not made into a second run.
	_, rej, err = a.Add(load(t, "split_part1.json"), t0.Add(2*time.Second))
	if err != nil || len(rej) != 2 || !errors.Is(rej[0].Err, ErrLate) {
		t.Errorf("Add(late spans) = %v, %v; want 2 ErrLate", rej, err)
	}
}

func TestAssemblerGraceAndIdle(t *testing.T) {
	a := NewAssembler(AssemblerConfig{Grace: 2 * time.Second, IdleTimeout: time.Minute})
	if ready, _, _ := a.Add(load(t, "split_part2.json"), t0); len(ready) != 0 {
		t.Fatalf("root released before its grace period")
	}
	// A late child within the grace period joins the run.
	if ready, _, _ := a.Add(load(t, "split_part1.json"), t0.Add(time.Second)); len(ready) != 0 {
		t.Fatalf("released early")
	}
	if due := a.Due(t0.Add(1900 * time.Millisecond)); len(due) != 0 {
		t.Fatalf("Due before grace = %d traces", len(due))
	}
	due := a.Due(t0.Add(2 * time.Second))
	if len(due) != 1 || len(due[0].Spans) != 4 || !due[0].Complete {
		t.Fatalf("Due after grace = %+v, want the complete trace of 4 spans", due)
	}
	// Children whose root never comes are released incomplete after the idle timeout.
	b := NewAssembler(AssemblerConfig{IdleTimeout: time.Minute})
	b.Add(load(t, "split_part1.json"), t0)
	if due := b.Due(t0.Add(59 * time.Second)); len(due) != 0 {
		t.Fatalf("released before idle timeout")
	}
	due = b.Due(t0.Add(time.Minute))
	if len(due) != 1 || due[0].Complete {
		t.Fatalf("Due after idle = %+v, want one incomplete trace", due)
	}
}

// withoutRoot drops a trace's root span: the rest waits in the buffer.
func withoutRoot(spans []Span) []Span {
	var out []Span
	for _, s := range spans {
		if !s.LocalRoot() {
			out = append(out, s)
		}
	}
	return out
}

func TestAssemblerBounds(t *testing.T) {
	a := NewAssembler(AssemblerConfig{MaxSpans: 3})
	if _, _, err := a.Add(load(t, "split_part1.json"), t0); err != nil {
		t.Fatal(err)
	}
	// 2 buffered + 6 new > 3: all or nothing.
	if _, _, err := a.Add(withoutRoot(load(t, "genai.json")), t0); !errors.Is(err, ErrFull) {
		t.Fatalf("Add over MaxSpans = %v, want ErrFull", err)
	}
	if _, spans := a.Stats(); spans != 2 {
		t.Errorf("a refused request buffered spans: %d buffered, want 2", spans)
	}
	// A trace complete within one request needs no room: a full buffer does not block it.
	ready, _, err := a.Add(load(t, "genai.json"), t0)
	if err != nil || len(ready) != 1 || len(ready[0].Spans) != 7 {
		t.Fatalf("Add(complete trace) with a full buffer = %d ready, %v; want it released", len(ready), err)
	}
	b := NewAssembler(AssemblerConfig{MaxSpansPerTrace: 5})
	ready, rej, err := b.Add(load(t, "genai.json"), t0) // the root comes last
	if err != nil || len(rej) != 1 || !errors.Is(rej[0].Err, ErrTooMany) {
		t.Errorf("Add 7 spans with MaxSpansPerTrace 5 = %v, %v; want 1 ErrTooMany", rej, err)
	}
	if len(ready) != 1 || len(ready[0].Spans) != 6 {
		t.Errorf("the trace was not released with its first 5 spans and its root: %+v", ready)
	}
	c := NewAssembler(AssemblerConfig{MaxTraces: 1})
	c.Add(load(t, "split_part1.json"), t0)
	if _, _, err := c.Add(withoutRoot(load(t, "openinference.json")), t0); !errors.Is(err, ErrFull) {
		t.Errorf("Add second trace with MaxTraces 1 = %v, want ErrFull", err)
	}
}

func TestAssemblerRestoreAndMemory(t *testing.T) {
	a := NewAssembler(AssemblerConfig{ClosedMemory: 1})
	ready, _, _ := a.Add(load(t, "genai.json"), t0)
	if len(ready) != 1 {
		t.Fatal("genai trace not released")
	}
	a.Restore(ready[0], t0) // its events could not be stored
	due := a.Due(t0)
	if len(due) != 1 || len(due[0].Spans) != 7 {
		t.Fatalf("restored trace not released again: %+v", due)
	}
	// With a memory of one id, releasing another trace forgets the first.
	a.Add(load(t, "openinference.json"), t0)
	if _, rej, _ := a.Add(load(t, "genai.json"), t0); len(rej) != 0 {
		t.Errorf("forgotten trace still refused: %v", rej)
	}
}

func TestAssemblerLocalRootWithRemoteParent(t *testing.T) {
	a := NewAssembler(AssemblerConfig{})
	children := load(t, "split_part1.json")
	root := load(t, "split_part2.json")
	for i := range root {
		if root[i].ParentID == "" { // the agent was called with a propagated context
			root[i].ParentID, root[i].RemoteParent = "feedfacefeedface", true
		}
	}
	a.Add(children, t0)
	ready, _, _ := a.Add(root, t0)
	if len(ready) != 1 || !ready[0].Complete {
		t.Fatalf("a span with a remote parent did not complete its trace: %+v", ready)
	}
	res, err := MapTrace(ready[0].Spans, Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Notes {
		if n.SpanID == "b7ad6b7169203331" {
			t.Errorf("a remote parent is noted as missing: %v", n)
		}
	}
	if res.Task != "helper" {
		t.Errorf("Task = %q, want helper", res.Task)
	}
}
