package receiver

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/otlpmap"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpCodes maps HTTP statuses to the gRPC codes OTLP puts in a google.rpc.Status body.
var otlpCodes = map[int]int32{
	http.StatusBadRequest: 3, http.StatusUnauthorized: 16, http.StatusForbidden: 7,
	http.StatusRequestEntityTooLarge: 8, http.StatusUnsupportedMediaType: 3,
	http.StatusTooManyRequests: 8, http.StatusServiceUnavailable: 14,
}

func (s *Server) handleTraces(w http.ResponseWriter, r *http.Request) int {
	const endpoint = "traces"
	asJSON := false
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		asJSON = true
	default:
		return writeOTLP(w, http.StatusUnsupportedMediaType, asJSON, &spb.Status{Code: 3,
			Message: fmt.Sprintf("Content-Type %q: OTLP/HTTP takes application/x-protobuf or application/json", mt)})
	}
	fail := func(code int, err error) int {
		return writeOTLP(w, code, asJSON, &spb.Status{Code: otlpCodes[code], Message: err.Error()})
	}
	p, err := s.auth.authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ditto"`)
		return fail(http.StatusUnauthorized, err)
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		var he *httpError
		switch {
		case errors.Is(err, ErrTooLarge):
			return fail(http.StatusRequestEntityTooLarge, err)
		case errors.As(err, &he):
			return fail(he.code, err)
		}
		return fail(http.StatusBadRequest, err)
	}
	var req *coltracepb.ExportTraceServiceRequest
	if asJSON {
		req, err = otlpmap.DecodeJSON(body)
	} else {
		req, err = otlpmap.DecodeProto(body)
	}
	if err != nil {
		return fail(http.StatusBadRequest, err)
	}
	spans, rejected := otlpmap.Spans(req)
	s.m.spansReceived.Add(float64(len(spans) + len(rejected)))
	var rej []string
	note := func(reason string, n int, msg string) {
		s.m.spansRejected.WithLabelValues(reason).Add(float64(n))
		if len(rej) < 5 {
			rej = append(rej, msg)
		}
	}
	for _, x := range rejected {
		note("invalid", 1, fmt.Sprintf("span %d: %v", x.Index, x.Err))
	}
	nRejected, forbidden := len(rejected), 0
	kept := spans[:0]
	for _, sp := range spans {
		study := p.DefaultStudy(s.cfg.DefaultStudy)
		if v, ok := sp.Attrs.Str("ditto.study"); ok {
			study = v
		} else if v, ok := sp.Resource.Str("ditto.study"); ok {
			study = v
		}
		if err := events.ValidateToken("study", study); err != nil {
			nRejected++
			note("unsafe_id", 1, fmt.Sprintf("span %s: %v", sp.SpanID, err))
			continue
		}
		if !p.May(study) {
			nRejected++
			forbidden++
			note("forbidden", 1, fmt.Sprintf("span %s: %v: %q (token %s)", sp.SpanID, ErrForbidden, study, p.Name))
			continue
		}
		sp.Study = study
		kept = append(kept, sp)
	}
	if forbidden > 0 && len(kept) == 0 && nRejected == forbidden {
		return fail(http.StatusForbidden, fmt.Errorf("%w: %s", ErrForbidden, strings.Join(rej, "; ")))
	}
	if len(kept) > 0 && s.gate.full() {
		// JetStream is behind: refuse before buffering anything, so that the retry is clean.
		s.throttle(w, endpoint, http.StatusTooManyRequests)
		return fail(http.StatusTooManyRequests, ErrThrottled)
	}
	s.mu.Lock()
	ready, late, err := s.asm.Add(kept, s.now())
	s.mu.Unlock()
	if err != nil { // the span buffer is full: incomplete traces are waiting for their roots
		s.throttle(w, endpoint, http.StatusServiceUnavailable)
		return fail(http.StatusServiceUnavailable, err)
	}
	for _, x := range late {
		nRejected++
		reason := "late"
		if errors.Is(x.Err, otlpmap.ErrTooMany) {
			reason = "too_many"
		}
		note(reason, 1, fmt.Sprintf("span %s of trace %s: %v", x.SpanID, x.TraceID, x.Err))
	}
	// The traces this request completed are stored before the answer, so a 200 means their
	// runs are in JetStream. Spans of traces still open are held in memory (bounded) until
	// their root span arrives.
	if failed := s.emit(r.Context(), ready, s.cfg.AdmitWait); len(failed) > 0 {
		s.restore(failed)
		s.throttle(w, endpoint, http.StatusServiceUnavailable)
		return fail(http.StatusServiceUnavailable, fmt.Errorf("%w: %d trace(s) could not be stored yet; they are kept and retried", ErrNotStored, len(failed)))
	}
	resp := &coltracepb.ExportTraceServiceResponse{}
	if nRejected > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: int64(nRejected), ErrorMessage: strings.Join(rej, "; ")}
	}
	return writeOTLP(w, http.StatusOK, asJSON, resp)
}

// emit maps each trace to its run and publishes the run's events, waiting for JetStream. It
// returns the traces that could not be stored (throttled or not acknowledged), for the caller
// to restore into the assembler; a trace that maps to no run is counted and dropped.
func (s *Server) emit(ctx context.Context, traces []otlpmap.Trace, wait time.Duration) (failed []otlpmap.Trace) {
	for _, t := range traces {
		msgs, err := s.mapTrace(t)
		if err != nil {
			reason := "map_error"
			switch {
			case errors.Is(err, otlpmap.ErrNoGenAI):
				reason = "no_genai"
			case errors.Is(err, otlpmap.ErrUnsafeName):
				reason = "unsafe_study"
			}
			s.m.tracesDropped.WithLabelValues(reason).Inc()
			s.log.Debug("ingest: trace produced no run", "trace", t.ID, "spans", len(t.Spans), "err", err)
			continue
		}
		// A very long trace is published in chunks that each fit the gate; a chunk that
		// fails leaves the trace to be published again whole (event ids make that a no-op for
		// the chunks already stored).
		chunk := max(s.cfg.MaxPending/4, 1)
		ok := true
		for i := 0; i < len(msgs) && ok; i += chunk {
			bad, err := s.publish(ctx, msgs[i:min(i+chunk, len(msgs))], wait)
			if err != nil || len(bad) > 0 {
				ok = false
				s.log.Warn("ingest: run not stored; trace kept", "trace", t.ID, "err", err, "unacked", len(bad))
			}
		}
		if !ok {
			failed = append(failed, t)
			continue
		}
		s.m.accepted.WithLabelValues("traces").Add(float64(len(msgs)))
		s.m.runs.WithLabelValues(fmt.Sprint(t.Complete)).Inc()
	}
	return failed
}

// mapTrace maps a trace and encodes its events. If an event exceeds the event size limit
// (large values whose JSON escaping grew), the trace is mapped again with a smaller value cap.
func (s *Server) mapTrace(t otlpmap.Trace) ([]pubMsg, error) {
	cfg := s.cfg.Mapping
	for attempt := 0; ; attempt++ {
		res, err := otlpmap.MapTrace(t.Spans, cfg, t.Complete)
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
		s.m.notes.Add(float64(len(res.Notes)))
		for _, n := range res.Notes {
			s.log.Debug("ingest: mapping note", "trace", t.ID, "span", n.SpanID, "name", n.Name, "note", n.Reason)
		}
		return msgs, nil
	}
}

// writeOTLP answers in the request's encoding: an ExportTraceServiceResponse on success, a
// google.rpc.Status otherwise (OTLP/HTTP).
func writeOTLP(w http.ResponseWriter, code int, asJSON bool, m proto.Message) int {
	var b []byte
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
		b, _ = protojson.Marshal(m)
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(m)
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
	return code
}
