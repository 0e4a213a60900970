package otlpmap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dittolab/ditto/events"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzMapOTLP feeds arbitrary bytes through both OTLP decoders and the mapping. Whatever the
// input, nothing panics, and every trace that maps yields events that validate, encode and
// fold: the mapping can never emit a poison history.
func FuzzMapOTLP(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		if req, err := DecodeJSON(raw); err == nil {
			if pb, err := proto.Marshal(req); err == nil {
				f.Add(pb)
			}
		}
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00","spanId":"zz"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, decode := range []func([]byte) (*coltracepb.ExportTraceServiceRequest, error){DecodeJSON, DecodeProto} {
			req, err := decode(data)
			if err != nil {
				continue
			}
			spans, _ := Spans(req)
			byTrace := map[string][]Span{}
			for _, s := range spans {
				s.Study = "fuzz"
				byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
			}
			for _, trace := range byTrace {
				for _, complete := range []bool{true, false} {
					res, err := MapTrace(trace, Config{MaxValueBytes: 64}, complete)
					if err != nil {
						continue
					}
					for i := range res.Events {
						if _, err := events.Encode(&res.Events[i]); err != nil {
							t.Fatalf("Encode(event %d) = %v", i, err)
						}
					}
					if _, err := events.Fold(res.Events); err != nil {
						t.Fatalf("Fold(mapped) = %v", err)
					}
				}
			}
			// Every span survives its trip through a DITTO_SPANS record unchanged.
			recs, _ := Records(req)
			for _, r := range recs {
				back, err := DecodeRecord(r.Data)
				if err != nil || back.SpanID != r.Span.SpanID || back.TraceID != r.Span.TraceID || back.Name != r.Span.Name {
					t.Fatalf("DecodeRecord(Records(req)) = %+v, %v; want span %s", back, err, r.Span.SpanID)
				}
			}
		}
	})
}
