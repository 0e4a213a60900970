package assembler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Assembler assembles traces from DITTO_SPANS into runs on DITTO_EVENTS (see the package doc).
// Create it with New and call Run; any number of Assemblers, in any number of processes, may
// run on one stream at once.
type Assembler struct {
	cfg Config
	bus *bus.Bus
	log *slog.Logger
	m   *metrics
	now func() time.Time
}

// New returns an Assembler on b. log may be nil.
func New(b *bus.Bus, cfg Config, log *slog.Logger) (*Assembler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Assembler{cfg: cfg.WithDefaults(), bus: b, log: log, m: newMetrics(), now: time.Now}, nil
}

// Collectors returns the Assembler's Prometheus metrics, for the process's registry.
func (a *Assembler) Collectors() []prometheus.Collector { return a.m.collectors() }

// Run consumes root spans and seen markers until ctx ends, then waits for the traces being
// assembled and returns nil. Broker errors (a restarting server, a lost consumer) are retried
// with back-off for as long as it takes.
func (a *Assembler) Run(ctx context.Context) error {
	sem := make(chan struct{}, a.cfg.Workers)
	var wg sync.WaitGroup
	for _, durable := range []string{events.AssemblerConsumer, events.AssemblerIdleConsumer} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.consume(ctx, durable, sem, &wg)
		}()
	}
	wg.Wait()
	return nil
}

// consume delivers the messages of one durable consumer to handlers, at most Workers at once
// across both consumers, until ctx ends.
func (a *Assembler) consume(ctx context.Context, durable string, sem chan struct{}, wg *sync.WaitGroup) {
	c := bus.AssemblyConsumer{Durable: durable, AckWait: a.cfg.AckWait, MaxAckPending: 10 * a.cfg.Workers}
	handle := a.handleRoot
	if durable == events.AssemblerIdleConsumer {
		c.MaxAckPending = a.cfg.MaxOpenTraces
		handle = a.handleSeen
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := a.session(ctx, c, sem, wg, handle)
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("assembler: consumer session ended; starting again", "durable", durable, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (a *Assembler) session(ctx context.Context, c bus.AssemblyConsumer, sem chan struct{}, wg *sync.WaitGroup, handle func(context.Context, jetstream.Msg)) error {
	cons, err := a.bus.EnsureAssemblyConsumer(ctx, c)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(a.cfg.Workers))
	if err != nil {
		return fmt.Errorf("assembler: pull %s: %w", c.Durable, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("assembler: next %s: %w", c.Durable, err)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil // not acknowledged: delivered again, here or elsewhere
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// A trace's assembly is not cut short by shutdown: it is bounded by its publishes'
			// ack timeout, and a half-done one would only be done again.
			handle(context.WithoutCancel(ctx), msg)
		}()
	}
}

// retryDelay is how long a failed assembly waits before it is delivered again: growing with
// the deliveries, at most a minute.
func retryDelay(delivered uint64) time.Duration {
	d := time.Second << min(delivered, 6)
	return min(d, time.Minute)
}

// handleRoot assembles the trace of a root span once its grace period is over.
func (a *Assembler) handleRoot(ctx context.Context, msg jetstream.Msg) {
	study, trace, _, err := events.ParseSpanSubject(msg.Subject())
	meta, merr := msg.Metadata()
	if err != nil || merr != nil {
		a.log.Error("assembler: root record with an unreadable subject or metadata; dropped", "subject", msg.Subject(), "err", errors.Join(err, merr))
		_ = msg.Term()
		return
	}
	if wait := meta.Timestamp.Add(a.cfg.Grace).Sub(a.now()); wait > 0 {
		_ = msg.NakWithDelay(wait)
		return
	}
	if err := a.assemble(ctx, study, trace, true); err != nil {
		a.m.retries.Inc()
		a.log.Warn("assembler: trace not assembled; it will be again", "study", study, "trace", trace, "deliveries", meta.NumDelivered, "err", err)
		_ = msg.NakWithDelay(retryDelay(meta.NumDelivered))
		return
	}
	_ = msg.Ack()
}

// handleSeen holds a trace's seen marker until the trace is done, its root has arrived (the
// root's own delivery assembles it), or it has had no new record for IdleTimeout: then it is
// assembled incomplete.
func (a *Assembler) handleSeen(ctx context.Context, msg jetstream.Msg) {
	study, trace, _, err := events.ParseSpanSubject(msg.Subject())
	meta, merr := msg.Metadata()
	if err != nil || merr != nil {
		a.log.Error("assembler: seen marker with an unreadable subject or metadata; dropped", "subject", msg.Subject(), "err", errors.Join(err, merr))
		_ = msg.Term()
		return
	}
	retry := func(err error) {
		a.m.retries.Inc()
		a.log.Warn("assembler: idle check failed; trying again", "study", study, "trace", trace, "err", err)
		_ = msg.NakWithDelay(retryDelay(meta.NumDelivered))
	}
	s, err := a.bus.Stream(ctx, events.SpansStream)
	if err != nil {
		retry(err)
		return
	}
	done, found, err := a.doneMarker(ctx, s, study, trace)
	if err != nil {
		retry(err)
		return
	}
	if found {
		if meta.Sequence.Stream > done.seq {
			// Records came after the run was assembled: they are not in it.
			a.m.late.Inc()
			a.log.Warn("assembler: spans arrived after their trace was assembled; they are kept in DITTO_SPANS, not in the run",
				"study", study, "trace", trace)
		}
		_ = msg.Ack()
		return
	}
	latest := meta.Timestamp
	for _, record := range []string{events.RecordRoot, events.RecordSpan, events.RecordLog} {
		subj, _ := events.SpanSubject(study, trace, record)
		m, err := s.LastMsg(ctx, subj)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		case err != nil:
			retry(err)
			return
		case record == events.RecordRoot:
			_ = msg.Ack() // the root arrived: its own delivery assembles the trace
			return
		case m.Time.After(latest):
			latest = m.Time
		}
	}
	if wait := latest.Add(a.cfg.IdleTimeout).Sub(a.now()); wait > 0 {
		_ = msg.NakWithDelay(wait)
		return
	}
	if err := a.assemble(ctx, study, trace, false); err != nil {
		retry(err)
		return
	}
	_ = msg.Ack()
}

// done is a trace's done marker: its stream sequence (records before it belong to the run) and
// whether the root had arrived.
type done struct {
	seq      uint64
	Complete bool `json:"complete"`
}

func (a *Assembler) doneMarker(ctx context.Context, s *bus.Stream, study, trace string) (done, bool, error) {
	subj, err := events.SpanSubject(study, trace, events.RecordDone)
	if err != nil {
		return done{}, false, err
	}
	m, err := s.LastMsg(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return done{}, false, nil
	}
	if err != nil {
		return done{}, false, err
	}
	d := done{seq: m.Sequence}
	if err := json.Unmarshal(m.Data, &d); err != nil {
		return done{}, false, fmt.Errorf("%w: done marker of %s: %v", ErrRecord, trace, err)
	}
	return d, true, nil
}

// assemble maps one trace to its run and publishes the run's events, waiting for JetStream.
// The first assembly of a trace stores its done marker; any later one (after a crash, or by a
// replica racing this one) maps the records the marker bounds, so every assembly of a trace
// publishes the same events.
func (a *Assembler) assemble(ctx context.Context, study, trace string, complete bool) error {
	s, err := a.bus.Stream(ctx, events.SpansStream)
	if err != nil {
		return err
	}
	d, found, err := a.doneMarker(ctx, s, study, trace)
	if err != nil {
		return err
	}
	if !found {
		subj, _ := events.SpanSubject(study, trace, events.RecordDone)
		data, _ := json.Marshal(done{Complete: complete})
		pctx, cancel := context.WithTimeout(ctx, a.cfg.AckTimeout)
		seq, err := a.bus.PublishIfLast(pctx, subj, study+"."+trace+".done", data, subj, 0)
		cancel()
		switch {
		case errors.Is(err, bus.ErrConflict): // another assembly stored it first
			if d, found, err = a.doneMarker(ctx, s, study, trace); err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("assembler: done marker of %s refused as a conflict but not found", trace)
			}
		case err != nil:
			return err
		default:
			d = done{seq: seq, Complete: complete}
		}
	}
	filter, _ := events.TraceRecordsFilter(study, trace)
	var spans []otlpmap.Span
	var evs []otlpmap.GenAIEvent
	err = s.ReadThrough(ctx, filter, d.seq, func(m jetstream.Msg) error {
		_, _, record, err := events.ParseSpanSubject(m.Subject())
		if err != nil {
			return err
		}
		switch record {
		case events.RecordSpan, events.RecordRoot:
			sp, err := otlpmap.DecodeRecord(m.Data())
			if err != nil {
				a.m.unreadable.Inc()
				a.log.Warn("assembler: unreadable span record skipped", "subject", m.Subject(), "err", err)
				return nil
			}
			sp.Study = study
			spans = append(spans, sp)
		case events.RecordLog:
			ev, err := otlpmap.DecodeLogRecord(m.Data())
			if err != nil {
				a.m.unreadable.Inc()
				a.log.Warn("assembler: unreadable log record skipped", "subject", m.Subject(), "err", err)
				return nil
			}
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(spans) == 0 {
		a.m.dropped.WithLabelValues("no_spans").Inc()
		a.log.Info("assembler: trace has GenAI events but no span; no run", "study", study, "trace", trace, "events", len(evs))
		return nil
	}
	if un := otlpmap.AttachEvents(spans, evs); len(un) > 0 {
		a.m.notes.Add(float64(len(un)))
		a.log.Debug("assembler: GenAI events of spans not in the trace", "trace", trace, "events", len(un))
	}
	msgs, err := a.mapTrace(spans, d.Complete)
	if err != nil {
		reason := "map_error"
		switch {
		case errors.Is(err, otlpmap.ErrNoGenAI):
			reason = "no_genai"
		case errors.Is(err, otlpmap.ErrUnsafeName):
			reason = "unsafe_study"
		}
		a.m.dropped.WithLabelValues(reason).Inc()
		a.log.Info("assembler: trace produced no run", "study", study, "trace", trace, "spans", len(spans), "err", err)
		return nil
	}
	p, err := a.bus.NewPublisher(bus.WithMaxInFlight(max(min(len(msgs), 512), 1)), bus.WithAckTimeout(a.cfg.AckTimeout))
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := p.Publish(ctx, m.subject, m.id, m.data); err != nil {
			return err
		}
	}
	if err := p.Wait(ctx); err != nil {
		return err
	}
	a.m.runs.WithLabelValues(fmt.Sprint(d.Complete)).Inc()
	a.m.events.Add(float64(len(msgs)))
	return nil
}

// pubMsg is one event ready to publish.
type pubMsg struct {
	subject, id string
	data        []byte
}

// mapTrace maps a trace and encodes its events. If an event exceeds the event size limit
// (large values whose JSON escaping grew), the trace is mapped again with a smaller value cap.
func (a *Assembler) mapTrace(spans []otlpmap.Span, complete bool) ([]pubMsg, error) {
	cfg := a.cfg.Mapping
	for attempt := 0; ; attempt++ {
		res, err := otlpmap.MapTrace(spans, cfg, complete)
		if err != nil {
			return nil, err
		}
		msgs := make([]pubMsg, 0, len(res.Events))
		tooLarge := false
		for i := range res.Events {
			e := &res.Events[i]
			data, err := events.Encode(e)
			if errors.Is(err, events.ErrTooLarge) && attempt == 0 {
				tooLarge = true
				break
			}
			if err != nil {
				return nil, fmt.Errorf("otlpmap produced an unencodable event: %w", err)
			}
			subject, err := events.SubjectOf(e)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, pubMsg{subject: subject, id: e.ID, data: data})
		}
		if tooLarge {
			cfg.MaxValueBytes = 16 << 10
			continue
		}
		a.m.notes.Add(float64(len(res.Notes)))
		for _, n := range res.Notes {
			a.log.Debug("assembler: mapping note", "trace", res.TraceID, "span", n.SpanID, "name", n.Name, "note", n.Reason)
		}
		return msgs, nil
	}
}
