package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/nats-io/nats.go/jetstream"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// exportError is an export refused as a whole, with its HTTP status (OTLP/gRPC maps it to a
// status code: see grpcCode).
type exportError struct {
	code int
	err  error
}

func (e *exportError) Error() string { return e.err.Error() }

// rejections collects the reasons of refused spans or log records for the partial_success
// message: the count is exact, the message names the first few.
type rejections struct {
	n    int
	msgs []string
}

func (r *rejections) add(n int, msg string) {
	r.n += n
	if len(r.msgs) < 5 {
		r.msgs = append(r.msgs, msg)
	}
}

func (r *rejections) message() string { return strings.Join(r.msgs, "; ") }

// traceKey is one trace of one study.
type traceKey struct{ study, trace string }

// studyOf returns the study a span or record goes to: its ditto.study attribute, its
// resource's, else the principal's default.
func (s *Server) studyOf(p *Principal, attrs, resource otlpmap.Attrs) string {
	if v, ok := attrs.Str("ditto.study"); ok {
		return v
	}
	if v, ok := resource.Str("ditto.study"); ok {
		return v
	}
	return p.DefaultStudy(s.cfg.DefaultStudy)
}

// notAgentMsg says why a trace's spans were refused.
const notAgentMsg = "none is an agent span (gen_ai.operation.name, openinference.span.kind, traceloop.span.kind or llm.request.type): " +
	"ditto records the runs of AI agents and keeps no plain spans; send those to a tracing backend"

// exportTraces stores the spans of one OTLP export on DITTO_SPANS and answers once JetStream
// acknowledged them all: the transport-independent part of POST /v1/traces and of the gRPC
// TraceService. A span is refused (counted in partial_success with the reason) when its ids are
// invalid, its study is unsafe or forbidden to the token, it is too large, or its trace carries
// no agent data (see notAgentMsg and docs/production.md). An export whose every span is
// forbidden is refused whole (403); one that finds no room, or that JetStream does not
// acknowledge, is refused whole (429, 503) and nothing of it can be lost by a retry.
func (s *Server) exportTraces(ctx context.Context, p *Principal, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, *exportError) {
	const endpoint = "traces"
	recs, invalid := otlpmap.Records(req)
	s.m.spansReceived.Add(float64(len(recs) + len(invalid)))
	var rej rejections
	note := func(reason, msg string, n int) {
		s.m.spansRejected.WithLabelValues(reason).Add(float64(n))
		rej.add(n, msg)
	}
	for _, x := range invalid {
		note("invalid", fmt.Sprintf("span %d: %v", x.Index, x.Err), 1)
	}
	forbidden := 0
	kept := recs[:0]
	arrival := s.now()
	for _, r := range recs {
		study := s.studyOf(p, r.Span.Attrs, r.Span.Resource)
		switch {
		case s.cfg.Times.check(r.Span.Start, arrival) != nil:
			note("implausible_time", fmt.Sprintf("span %s start: %v", r.Span.SpanID, s.cfg.Times.check(r.Span.Start, arrival)), 1)
			continue
		case s.cfg.Times.check(r.Span.End, arrival) != nil:
			note("implausible_time", fmt.Sprintf("span %s end: %v", r.Span.SpanID, s.cfg.Times.check(r.Span.End, arrival)), 1)
			continue
		case events.ValidateToken("study", study) != nil:
			note("unsafe_id", fmt.Sprintf("span %s: %v", r.Span.SpanID, events.ValidateToken("study", study)), 1)
			continue
		case !p.May(study):
			forbidden++
			note("forbidden", fmt.Sprintf("span %s: %v: %q (token %s)", r.Span.SpanID, ErrForbidden, study, p.Name), 1)
			continue
		case len(r.Data) > events.MaxEventSize-1024:
			note("too_large", fmt.Sprintf("span %s: %d bytes, over the %d bytes a span may take", r.Span.SpanID, len(r.Data), events.MaxEventSize-1024), 1)
			continue
		}
		r.Span.Study = study
		kept = append(kept, r)
	}
	if forbidden > 0 && len(kept) == 0 && rej.n == forbidden {
		return nil, &exportError{http.StatusForbidden, fmt.Errorf("%w: %s", ErrForbidden, rej.message())}
	}

	// Which traces carry agent data in this export, and which have their root in it.
	agent, root := map[traceKey]bool{}, map[traceKey]bool{}
	var order []traceKey
	count := map[traceKey]int{}
	for i := range kept {
		k := traceKey{kept[i].Span.Study, kept[i].Span.TraceID}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
		if kept[i].Span.Agent() {
			agent[k] = true
		}
		if kept[i].Span.LocalRoot() {
			root[k] = true
		}
	}
	// A trace with no agent span in this export is kept only when it is the end of an agent
	// trace whose spans came earlier (its seen marker is stored): an HTTP or framework span
	// around the agent, exported last because it ends last. Any other is refused.
	for _, k := range order {
		if agent[k] {
			continue
		}
		if root[k] && !s.cfg.DisableSeenCheck {
			seen, err := s.traceSeen(ctx, k)
			if err != nil {
				s.throttled(endpoint, http.StatusServiceUnavailable)
				return nil, &exportError{http.StatusServiceUnavailable, fmt.Errorf("%w: %v", ErrNotStored, err)}
			}
			if seen {
				agent[k] = true
				continue
			}
		}
		note("not_agent", fmt.Sprintf("trace %s: %d span(s), %s", k.trace, count[k], notAgentMsg), count[k])
	}

	msgs := make([]pubMsg, 0, len(kept)+len(order))
	var roots []pubMsg
	for _, r := range kept {
		k := traceKey{r.Span.Study, r.Span.TraceID}
		if !agent[k] {
			continue
		}
		record := events.RecordSpan
		if r.Span.LocalRoot() {
			record = events.RecordRoot
		}
		subject, err := events.SpanSubject(k.study, k.trace, record)
		if err != nil {
			note("unsafe_id", fmt.Sprintf("span %s: %v", r.Span.SpanID, err), 1)
			continue
		}
		m := pubMsg{subject: subject, id: k.study + "." + k.trace + "." + r.Span.SpanID, data: r.Data}
		if record == events.RecordRoot {
			roots = append(roots, m) // last: a root starts the assembly of what came before it
		} else {
			msgs = append(msgs, m)
		}
	}
	for _, k := range order {
		if agent[k] && !root[k] {
			// The trace's first spans start its idle timeout (one marker per trace within the
			// duplicate window: the msg id is the trace's).
			subject, _ := events.SpanSubject(k.study, k.trace, events.RecordSeen)
			msgs = append(msgs, pubMsg{subject: subject, id: k.study + "." + k.trace + ".seen"})
		}
	}
	msgs = append(msgs, roots...)
	if err := s.store(ctx, endpoint, msgs); err != nil {
		return nil, err
	}
	s.m.spansStored.Add(float64(len(msgs) - countSeen(msgs)))
	resp := &coltracepb.ExportTraceServiceResponse{}
	if rej.n > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: int64(rej.n), ErrorMessage: rej.message()}
	}
	return resp, nil
}

func countSeen(msgs []pubMsg) int {
	n := 0
	for _, m := range msgs {
		if m.data == nil {
			n++
		}
	}
	return n
}

// traceSeen reports whether spans of the trace were stored before (its seen marker exists).
func (s *Server) traceSeen(ctx context.Context, k traceKey) (bool, error) {
	st, err := s.spansStream(ctx)
	if err != nil {
		return false, err
	}
	subject, err := events.SpanSubject(k.study, k.trace, events.RecordSeen)
	if err != nil {
		return false, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	defer cancel()
	_, err = st.LastMsg(lctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// store publishes msgs as one admission and waits for every acknowledgement; it returns the
// export error to answer when they are not all stored.
func (s *Server) store(ctx context.Context, endpoint string, msgs []pubMsg) *exportError {
	if len(msgs) == 0 {
		return nil
	}
	if len(msgs) > s.cfg.MaxPending {
		return &exportError{http.StatusRequestEntityTooLarge, fmt.Errorf("%w: %d records in one export, more than --max-pending %d", ErrTooLarge, len(msgs), s.cfg.MaxPending)}
	}
	failed, err := s.publish(ctx, msgs, s.cfg.AdmitWait)
	switch {
	case errors.Is(err, ErrThrottled):
		s.throttled(endpoint, http.StatusTooManyRequests)
		return &exportError{http.StatusTooManyRequests, err}
	case err != nil:
		s.throttled(endpoint, http.StatusServiceUnavailable)
		return &exportError{http.StatusServiceUnavailable, err}
	case len(failed) > 0:
		s.throttled(endpoint, http.StatusServiceUnavailable)
		s.log.Warn("ingest: export not stored", "endpoint", endpoint, "unacked", len(failed))
		return &exportError{http.StatusServiceUnavailable, fmt.Errorf("%w: %d of %d records not acknowledged; retry the export (records are idempotent)", ErrNotStored, len(failed), len(msgs))}
	}
	return nil
}

// throttled counts an answer that tells the client to retry.
func (s *Server) throttled(endpoint string, code int) {
	s.m.throttled.WithLabelValues(endpoint, fmt.Sprint(code)).Inc()
}

// exportLogs stores the GenAI events of one OTLP logs export on DITTO_SPANS, beside the spans of
// their trace, and answers once JetStream acknowledged them: the part of POST /v1/logs and the
// gRPC LogsService that does not depend on the transport. Log records that are not GenAI events
// of a span are refused in partial_success, with the reason.
func (s *Server) exportLogs(ctx context.Context, p *Principal, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, *exportError) {
	const endpoint = "logs"
	recs, invalid := otlpmap.LogRecords(req)
	s.m.logsReceived.Add(float64(len(recs) + len(invalid)))
	var rej rejections
	note := func(reason, msg string) {
		s.m.logsRejected.WithLabelValues(reason).Inc()
		rej.add(1, msg)
	}
	for _, x := range invalid {
		note("not_genai", fmt.Sprintf("log record %d: %v", x.Index, x.Err))
	}
	forbidden := 0
	msgs := make([]pubMsg, 0, len(recs))
	for _, r := range recs {
		study := s.studyOf(p, r.Event.Attrs, r.Event.Resource)
		subject, err := events.SpanSubject(study, r.Event.TraceID, events.RecordLog)
		switch {
		case err != nil:
			note("unsafe_id", fmt.Sprintf("log record of span %s: %v", r.Event.SpanID, err))
			continue
		case !p.May(study):
			forbidden++
			note("forbidden", fmt.Sprintf("log record of span %s: %v: %q (token %s)", r.Event.SpanID, ErrForbidden, study, p.Name))
			continue
		case len(r.Data) > events.MaxEventSize-1024:
			note("too_large", fmt.Sprintf("log record of span %s: %d bytes", r.Event.SpanID, len(r.Data)))
			continue
		}
		msgs = append(msgs, pubMsg{subject: subject, id: study + "." + r.Event.TraceID + "." + r.Event.SpanID + ".log." + otlpmap.LogRecordID(r.Data), data: r.Data})
	}
	if forbidden > 0 && len(msgs) == 0 && rej.n == forbidden {
		return nil, &exportError{http.StatusForbidden, fmt.Errorf("%w: %s", ErrForbidden, rej.message())}
	}
	if err := s.store(ctx, endpoint, msgs); err != nil {
		return nil, err
	}
	s.m.logsStored.Add(float64(len(msgs)))
	resp := &collogspb.ExportLogsServiceResponse{}
	if rej.n > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: int64(rej.n), ErrorMessage: rej.message()}
	}
	return resp, nil
}

// retryAfter is the delay clients are told to wait before retrying.
func (s *Server) retryAfter() time.Duration { return max(s.cfg.RetryAfter, time.Second) }
