package otlpmap

import (
	"fmt"
	"slices"
	"time"
)

// AssemblerConfig bounds the spans held while traces are incomplete.
type AssemblerConfig struct {
	MaxTraces        int           // traces buffered at once; default 10,000
	MaxSpans         int           // spans buffered over all traces; default 200,000
	MaxSpansPerTrace int           // default 10,000; later spans of a longer trace are refused, except its root
	Grace            time.Duration // wait after the root span for late siblings; default 0 (emit at once)
	IdleTimeout      time.Duration // flush a trace whose root never came after this long without a span; default 5m
	ClosedMemory     int           // emitted trace ids remembered to refuse their late spans; default 100,000
}

// WithDefaults returns c with zero fields set to their defaults.
func (c AssemblerConfig) WithDefaults() AssemblerConfig {
	if c.MaxTraces <= 0 {
		c.MaxTraces = 10_000
	}
	if c.MaxSpans <= 0 {
		c.MaxSpans = 200_000
	}
	if c.MaxSpansPerTrace <= 0 {
		c.MaxSpansPerTrace = 10_000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.ClosedMemory <= 0 {
		c.ClosedMemory = 100_000
	}
	return c
}

// Trace is the buffered spans of one trace, ready to map.
type Trace struct {
	ID       string
	Spans    []Span
	Complete bool // the root span arrived
}

type pending struct {
	spans    []Span
	ids      map[string]bool
	rootAt   time.Time // when the root span arrived; zero until then
	lastSeen time.Time
}

// Assembler buffers the spans of each trace until the trace is complete. A trace is complete
// when its local root span has arrived (Span.LocalRoot: no parent, or a remote parent; an
// OpenTelemetry SDK exports it last because it ends last), plus Grace. When several processes
// export spans of one trace, set Grace so that the other processes' spans join the run. A trace whose root never arrives is released as
// incomplete after IdleTimeout. Released traces are remembered (ClosedMemory) so that their
// late spans are refused rather than starting a second, partial run.
//
// An Assembler reads no clock: every method is told the time. It is not safe for concurrent
// use; the caller serialises access.
type Assembler struct {
	cfg    AssemblerConfig
	traces map[string]*pending
	total  int
	closed map[string]uint64 // trace id → generation in ring
	ring   []string
	next   uint64
}

// NewAssembler returns an empty Assembler.
func NewAssembler(cfg AssemblerConfig) *Assembler {
	cfg = cfg.WithDefaults()
	return &Assembler{cfg: cfg, traces: map[string]*pending{}, closed: map[string]uint64{}, ring: make([]string, cfg.ClosedMemory)}
}

// Stats returns the number of buffered traces and spans.
func (a *Assembler) Stats() (traces, spans int) { return len(a.traces), a.total }

// Add buffers spans and returns the traces they complete. It is all or nothing on capacity:
// when the new spans would exceed MaxSpans or MaxTraces, nothing is buffered and the error
// wraps ErrFull (the caller answers "retry later"). Spans of already released traces
// (ErrLate) and spans beyond MaxSpansPerTrace (ErrTooMany) are refused one by one, with
// their index in spans. A span already buffered is ignored: exporters retry.
func (a *Assembler) Add(spans []Span, now time.Time) (ready []Trace, rejected []Rejected, err error) {
	// Spans of traces this request completes (their root is in it and there is no grace
	// period) are released at once: they do not need room, so a full buffer of incomplete
	// traces does not block complete ones.
	completing := map[string]bool{}
	if a.cfg.Grace <= 0 {
		for i := range spans {
			if s := &spans[i]; s.LocalRoot() {
				if p := a.traces[s.TraceID]; p == nil || p.rootAt.IsZero() {
					completing[s.TraceID] = true
				}
			}
		}
	}
	newSpans, newTraces := 0, map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if _, late := a.closed[s.TraceID]; late || completing[s.TraceID] {
			continue
		}
		if p := a.traces[s.TraceID]; p != nil {
			if !p.ids[s.SpanID] {
				newSpans++
			}
		} else {
			newSpans++
			newTraces[s.TraceID] = true
		}
	}
	if a.total+newSpans > a.cfg.MaxSpans || len(a.traces)+len(newTraces) > a.cfg.MaxTraces {
		return nil, nil, fmt.Errorf("%w: %d traces and %d spans buffered, %d more spans in this request (limits %d traces, %d spans)",
			ErrFull, len(a.traces), a.total, newSpans, a.cfg.MaxTraces, a.cfg.MaxSpans)
	}
	var completed []string
	for i := range spans {
		s := spans[i]
		if _, late := a.closed[s.TraceID]; late {
			rejected = append(rejected, Rejected{Index: i, TraceID: s.TraceID, SpanID: s.SpanID, Err: ErrLate})
			continue
		}
		p := a.traces[s.TraceID]
		if p == nil {
			p = &pending{ids: map[string]bool{}}
			a.traces[s.TraceID] = p
		}
		if p.ids[s.SpanID] {
			continue
		}
		// The local root is always kept: without it the trace could never complete.
		if len(p.spans) >= a.cfg.MaxSpansPerTrace && !s.LocalRoot() {
			rejected = append(rejected, Rejected{Index: i, TraceID: s.TraceID, SpanID: s.SpanID,
				Err: fmt.Errorf("%w: more than %d", ErrTooMany, a.cfg.MaxSpansPerTrace)})
			continue
		}
		p.ids[s.SpanID] = true
		p.spans = append(p.spans, s)
		p.lastSeen = now
		a.total++
		if s.LocalRoot() && p.rootAt.IsZero() {
			p.rootAt = now
			if a.cfg.Grace <= 0 {
				completed = append(completed, s.TraceID)
			}
		}
	}
	for _, id := range completed {
		ready = append(ready, a.release(id, true))
	}
	return ready, rejected, nil
}

// Due releases the traces whose grace period or idle timeout has passed at now, in trace id
// order.
func (a *Assembler) Due(now time.Time) []Trace {
	var ids []string
	for id, p := range a.traces {
		switch {
		case !p.rootAt.IsZero() && !now.Before(p.rootAt.Add(a.cfg.Grace)):
			ids = append(ids, id)
		case p.rootAt.IsZero() && !now.Before(p.lastSeen.Add(a.cfg.IdleTimeout)):
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]Trace, 0, len(ids))
	for _, id := range ids {
		out = append(out, a.release(id, !a.traces[id].rootAt.IsZero()))
	}
	return out
}

// Drain releases every buffered trace (at shutdown), in trace id order.
func (a *Assembler) Drain() []Trace {
	ids := make([]string, 0, len(a.traces))
	for id := range a.traces {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Trace, 0, len(ids))
	for _, id := range ids {
		out = append(out, a.release(id, !a.traces[id].rootAt.IsZero()))
	}
	return out
}

// Restore puts back a released trace whose events could not be stored, so that a retried
// export (or the next Due) releases it again. It may exceed the capacity bounds by that trace.
func (a *Assembler) Restore(t Trace, now time.Time) {
	delete(a.closed, t.ID)
	p := a.traces[t.ID]
	if p == nil {
		p = &pending{ids: map[string]bool{}}
		a.traces[t.ID] = p
	}
	for _, s := range t.Spans {
		if !p.ids[s.SpanID] {
			p.ids[s.SpanID] = true
			p.spans = append(p.spans, s)
			a.total++
		}
	}
	p.lastSeen = now
	if t.Complete && p.rootAt.IsZero() {
		p.rootAt = now
	}
}

func (a *Assembler) release(id string, complete bool) Trace {
	p := a.traces[id]
	delete(a.traces, id)
	a.total -= len(p.spans)
	// Remember the id; evict the oldest remembered id when the ring is full.
	slot := a.next % uint64(len(a.ring))
	if old := a.ring[slot]; old != "" && a.closed[old] == a.next-uint64(len(a.ring)) {
		delete(a.closed, old)
	}
	a.ring[slot] = id
	a.closed[id] = a.next
	a.next++
	return Trace{ID: id, Spans: p.spans, Complete: complete}
}
