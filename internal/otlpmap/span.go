package otlpmap

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Attrs are span or resource attributes. Values are string, bool, int64, float64, []byte,
// []any or map[string]any (OTLP's AnyValue).
type Attrs map[string]any

// StatusCode is a span's status code.
type StatusCode int

// Status codes, as in OTLP.
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

// SpanEvent is a timed event of a span (only exceptions are read).
type SpanEvent struct {
	Name  string
	Time  time.Time
	Attrs Attrs
}

// Span is one span in the form the mapping reads. Ids are lowercase hex; ParentID is "" for
// a trace root.
type Span struct {
	TraceID, SpanID, ParentID string
	// RemoteParent says the parent span is in another process (OTLP span flags). Such a span
	// is the local root of this process's part of the trace.
	RemoteParent  bool
	Name          string
	Start, End    time.Time
	Attrs         Attrs
	Resource      Attrs
	Status        StatusCode
	StatusMessage string
	Events        []SpanEvent
	// GenAI are the GenAI events of the span: its span events named gen_ai.*, and the log
	// records of the span joined to it by AttachEvents.
	GenAI []GenAIEvent
	// Study is the ditto study the span is written to; the ingestion server sets it from the
	// ditto.study attribute or the caller's default before storing.
	Study string
}

// Rejected is a span refused before mapping (index counts spans in request order).
type Rejected struct {
	Index   int
	TraceID string
	SpanID  string
	Err     error
}

// DecodeProto parses an OTLP ExportTraceServiceRequest in protobuf form.
func DecodeProto(b []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("%w: protobuf: %v", ErrMalformed, err)
	}
	return &req, nil
}

// DecodeJSON parses an OTLP ExportTraceServiceRequest in the OTLP/JSON form.
//
// OTLP/JSON differs from protobuf's canonical JSON in one way that matters: trace and span ids
// are hex strings, not base64. protojson reads a 32-digit hex id as base64 and yields 24 bytes
// (16 hex digits: 12 bytes); since hex digits are base64 digits and those lengths need no
// padding, re-encoding those bytes as base64 gives back the hex text exactly. SpanFromProto
// undoes it (hexID), so ids sent either as hex (OTLP/JSON) or as base64 of the raw bytes
// (protobuf's JSON mapping) are both accepted.
func DecodeJSON(b []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	var req coltracepb.ExportTraceServiceRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("%w: json: %v", ErrMalformed, err)
	}
	return &req, nil
}

// hexID returns the lowercase hex form of an id of n bytes, accepting the raw bytes (protobuf,
// or base64 in JSON) or the bytes protojson makes of a hex string (see DecodeJSON).
func hexID(b []byte, n int) (string, bool) {
	switch len(b) {
	case n:
	case n * 3 / 2:
		raw, err := hex.DecodeString(base64.StdEncoding.EncodeToString(b))
		if err != nil || len(raw) != n {
			return "", false
		}
		b = raw
	default:
		return "", false
	}
	for _, c := range b {
		if c != 0 {
			return hex.EncodeToString(b), true
		}
	}
	return "", false // all-zero ids are invalid in OpenTelemetry
}

// Spans flattens a request into Spans, refusing spans whose ids are invalid or that have no
// start time. Index in a Rejected counts spans in request order.
func Spans(req *coltracepb.ExportTraceServiceRequest) ([]Span, []Rejected) {
	var out []Span
	var rej []Rejected
	eachSpan(req, func(i int, _ *tracepb.ResourceSpans, _ *tracepb.ScopeSpans, ps *tracepb.Span, s Span, err error) {
		if err != nil {
			rej = append(rej, Rejected{Index: i, TraceID: hex.EncodeToString(ps.GetTraceId()), SpanID: hex.EncodeToString(ps.GetSpanId()), Err: err})
			return
		}
		out = append(out, s)
	})
	return out, rej
}

// eachSpan converts the spans of req in request order (SpanFromProto, with their resource's
// attributes) and calls fn with each one's index in the request, the resource and scope spans
// it came from, the span itself, and its conversion or why it failed.
func eachSpan(req *coltracepb.ExportTraceServiceRequest, fn func(i int, rs *tracepb.ResourceSpans, ss *tracepb.ScopeSpans, ps *tracepb.Span, s Span, err error)) {
	i := 0
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, ps := range ss.GetSpans() {
				s, err := SpanFromProto(ps, res)
				fn(i, rs, ss, ps, s, err)
				i++
			}
		}
	}
}

// SpanFromProto converts one OTLP span with its resource's attributes.
func SpanFromProto(ps *tracepb.Span, resource Attrs) (Span, error) {
	tid, ok := hexID(ps.GetTraceId(), 16)
	if !ok {
		return Span{}, fmt.Errorf("%w: trace id must be 16 non-zero bytes (32 hex digits)", ErrInvalidID)
	}
	sid, ok := hexID(ps.GetSpanId(), 8)
	if !ok {
		return Span{}, fmt.Errorf("%w: span id must be 8 non-zero bytes (16 hex digits)", ErrInvalidID)
	}
	var pid string
	if len(ps.GetParentSpanId()) > 0 {
		if pid, ok = hexID(ps.GetParentSpanId(), 8); !ok {
			return Span{}, fmt.Errorf("%w: parent span id must be 8 bytes (16 hex digits) or empty", ErrInvalidID)
		}
	}
	if ps.GetStartTimeUnixNano() == 0 {
		return Span{}, fmt.Errorf("%w: span %s has no start time", ErrMalformed, sid)
	}
	start := unixNano(ps.GetStartTimeUnixNano())
	end := unixNano(ps.GetEndTimeUnixNano())
	if end.Before(start) { // an unended or skewed span: treat it as instantaneous
		end = start
	}
	const remote = uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	s := Span{
		TraceID: tid, SpanID: sid, ParentID: pid, RemoteParent: pid != "" && ps.GetFlags()&remote == remote, Name: ps.GetName(),
		Start: start, End: end, Attrs: attrs(ps.GetAttributes()), Resource: resource,
		Status: StatusCode(ps.GetStatus().GetCode()), StatusMessage: ps.GetStatus().GetMessage(),
	}
	if s.Status < StatusUnset || s.Status > StatusError {
		s.Status = StatusUnset
	}
	for _, ev := range ps.GetEvents() {
		switch name := ev.GetName(); {
		case name == "exception":
			s.Events = append(s.Events, SpanEvent{Name: name, Time: unixNano(ev.GetTimeUnixNano()), Attrs: attrs(ev.GetAttributes())})
		case strings.HasPrefix(name, "gen_ai."):
			// Instrumentations written before GenAI events became log records put them here,
			// their content in attributes.
			a := attrs(ev.GetAttributes())
			s.GenAI = append(s.GenAI, GenAIEvent{TraceID: tid, SpanID: sid, Name: name, Time: unixNano(ev.GetTimeUnixNano()), Attrs: a})
		}
	}
	return s, nil
}

func unixNano(ns uint64) time.Time {
	if ns > 1<<63-1 {
		ns = 1<<63 - 1
	}
	return time.Unix(0, int64(ns)).UTC()
}

func attrs(kvs []*commonpb.KeyValue) Attrs {
	if len(kvs) == 0 {
		return nil
	}
	a := make(Attrs, len(kvs))
	for _, kv := range kvs {
		if v := anyValue(kv.GetValue(), 0); v != nil && kv.GetKey() != "" {
			a[kv.GetKey()] = v
		}
	}
	return a
}

// anyValue converts an AnyValue; nesting deeper than 32 levels is cut (protobuf's own limit is
// 100, but nothing the mapping reads is that deep).
func anyValue(v *commonpb.AnyValue, depth int) any {
	if v == nil || depth > 32 {
		return nil
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e, depth+1))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = anyValue(kv.GetValue(), depth+1)
		}
		return out
	}
	return nil
}

// LocalRoot reports whether s is the root of the trace as exported by its process: it has no
// parent, or its parent is remote (the agent was called with a propagated trace context). An
// SDK exports it last, since it ends last.
func (s *Span) LocalRoot() bool { return s.ParentID == "" || s.RemoteParent }

// AttachEvents joins GenAI events (log records) to the spans of one trace by span id, in time
// order, and returns the events whose span is not among spans.
func AttachEvents(spans []Span, evs []GenAIEvent) (unattached []GenAIEvent) {
	at := make(map[string]int, len(spans))
	for i := range spans {
		at[spans[i].SpanID] = i
	}
	for _, ev := range evs {
		i, ok := at[ev.SpanID]
		if !ok {
			unattached = append(unattached, ev)
			continue
		}
		spans[i].GenAI = append(spans[i].GenAI, ev)
	}
	for i := range spans {
		slices.SortStableFunc(spans[i].GenAI, func(a, b GenAIEvent) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	}
	return unattached
}
