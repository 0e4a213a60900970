package otlpmap

import (
	"fmt"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Record is one span as it is stored on DITTO_SPANS before its trace is assembled: Data is the
// span with its resource and instrumentation scope, as an OTLP TracesData holding that one span
// (protobuf), so that nothing the exporter sent is lost and the assembler reads the very same
// span. Span is Data decoded, for the receiver's decisions (study, kind, root).
type Record struct {
	Span Span
	Data []byte
}

// Records splits a request into one Record per span, refusing (as Spans does) spans whose ids
// are invalid or that have no start time.
func Records(req *coltracepb.ExportTraceServiceRequest) ([]Record, []Rejected) {
	var out []Record
	var rej []Rejected
	eachSpan(req, func(i int, rs *tracepb.ResourceSpans, ss *tracepb.ScopeSpans, ps *tracepb.Span, s Span, err error) {
		if err != nil {
			rej = append(rej, Rejected{Index: i, Err: err})
			return
		}
		one := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource: rs.GetResource(), SchemaUrl: rs.GetSchemaUrl(),
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.GetScope(), SchemaUrl: ss.GetSchemaUrl(), Spans: []*tracepb.Span{ps}}},
		}}}
		data, err := proto.Marshal(one)
		if err != nil {
			rej = append(rej, Rejected{Index: i, TraceID: s.TraceID, SpanID: s.SpanID, Err: fmt.Errorf("%w: %v", ErrMalformed, err)})
			return
		}
		out = append(out, Record{Span: s, Data: data})
	})
	return out, rej
}

// DecodeRecord reads a span Record's Data back into its Span.
func DecodeRecord(b []byte) (Span, error) {
	var td tracepb.TracesData
	if err := proto.Unmarshal(b, &td); err != nil {
		return Span{}, fmt.Errorf("%w: span record: %v", ErrMalformed, err)
	}
	if len(td.ResourceSpans) != 1 || len(td.ResourceSpans[0].ScopeSpans) != 1 || len(td.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
		return Span{}, fmt.Errorf("%w: a span record holds exactly one span", ErrMalformed)
	}
	rs := td.ResourceSpans[0]
	return SpanFromProto(rs.ScopeSpans[0].Spans[0], attrs(rs.GetResource().GetAttributes()))
}

// Agent reports whether a span carries agent data: its kind is one the mapping turns into
// events (an agent, step, plan, tool or inference span of one of the three vocabularies).
func (s *Span) Agent() bool {
	k, _ := Classify(s)
	return k != KindOther
}
