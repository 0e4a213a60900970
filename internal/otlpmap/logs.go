package otlpmap

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// GenAIEvent is a GenAI semantic-conventions event — gen_ai.system.message,
// gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message, gen_ai.choice,
// gen_ai.client.inference.operation.details — sent as an OpenTelemetry log record (or, by older
// instrumentations, as a span event). It belongs to the span whose id it carries.
type GenAIEvent struct {
	TraceID, SpanID string
	Name            string
	Time            time.Time
	Attrs           Attrs
	Body            any   // the log record's body: usually a map (role, content, tool_calls, …)
	Resource        Attrs // the attributes of the resource that sent it (log records only)
}

// LogRecord is one GenAI log record as stored on DITTO_SPANS: Data is the record with its
// resource and scope, as an OTLP LogsData holding that one record (protobuf).
type LogRecord struct {
	Event GenAIEvent
	Data  []byte
}

// DecodeLogsProto parses an OTLP ExportLogsServiceRequest in protobuf form.
func DecodeLogsProto(b []byte) (*collogspb.ExportLogsServiceRequest, error) {
	var req collogspb.ExportLogsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("%w: protobuf: %v", ErrMalformed, err)
	}
	return &req, nil
}

// DecodeLogsJSON parses an OTLP ExportLogsServiceRequest in the OTLP/JSON form (ids in hex,
// read as DecodeJSON reads them).
func DecodeLogsJSON(b []byte) (*collogspb.ExportLogsServiceRequest, error) {
	var req collogspb.ExportLogsServiceRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("%w: json: %v", ErrMalformed, err)
	}
	return &req, nil
}

// eventName is a log record's event name: the event_name field, else the event.name attribute
// (instrumentations written before the field existed).
func eventName(lr *logspb.LogRecord, a Attrs) string {
	if n := lr.GetEventName(); n != "" {
		return n
	}
	n, _ := a.Str("event.name")
	return n
}

// LogRecords splits a request into one LogRecord per GenAI event. A record that is not a GenAI
// event (its event name does not start with gen_ai.) or that names no trace and span is
// rejected with the reason: ditto joins events to the spans of agent runs and keeps nothing
// else. Index in a Rejected counts log records in request order.
func LogRecords(req *collogspb.ExportLogsServiceRequest) ([]LogRecord, []Rejected) {
	var out []LogRecord
	var rej []Rejected
	i := 0
	for _, rl := range req.GetResourceLogs() {
		res := attrs(rl.GetResource().GetAttributes())
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				ev, err := genAIEvent(lr)
				ev.Resource = res
				if err == nil {
					one := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
						Resource: rl.GetResource(), SchemaUrl: rl.GetSchemaUrl(),
						ScopeLogs: []*logspb.ScopeLogs{{Scope: sl.GetScope(), SchemaUrl: sl.GetSchemaUrl(), LogRecords: []*logspb.LogRecord{lr}}},
					}}}
					var data []byte
					if data, err = proto.Marshal(one); err == nil {
						out = append(out, LogRecord{Event: ev, Data: data})
					}
				}
				if err != nil {
					rej = append(rej, Rejected{Index: i, TraceID: ev.TraceID, SpanID: ev.SpanID, Err: err})
				}
				i++
			}
		}
	}
	return out, rej
}

func genAIEvent(lr *logspb.LogRecord) (GenAIEvent, error) {
	a := attrs(lr.GetAttributes())
	ev := GenAIEvent{Name: eventName(lr, a), Attrs: a, Body: anyValue(lr.GetBody(), 0)}
	ev.TraceID, _ = hexID(lr.GetTraceId(), 16)
	ev.SpanID, _ = hexID(lr.GetSpanId(), 8)
	ev.Time = unixNano(lr.GetTimeUnixNano())
	if lr.GetTimeUnixNano() == 0 {
		ev.Time = unixNano(lr.GetObservedTimeUnixNano())
	}
	switch {
	case !strings.HasPrefix(ev.Name, "gen_ai."):
		return ev, fmt.Errorf("%w: event name %q: only GenAI events (gen_ai.*) are joined to agent spans", ErrNotGenAIEvent, ev.Name)
	case ev.TraceID == "" || ev.SpanID == "":
		return ev, fmt.Errorf("%w: GenAI event %s names no trace and span (emit it inside the span's context)", ErrNotGenAIEvent, ev.Name)
	}
	return ev, nil
}

// DecodeLogRecord reads a LogRecord's Data back into its event.
func DecodeLogRecord(b []byte) (GenAIEvent, error) {
	var ld logspb.LogsData
	if err := proto.Unmarshal(b, &ld); err != nil {
		return GenAIEvent{}, fmt.Errorf("%w: log record: %v", ErrMalformed, err)
	}
	if len(ld.ResourceLogs) != 1 || len(ld.ResourceLogs[0].ScopeLogs) != 1 || len(ld.ResourceLogs[0].ScopeLogs[0].LogRecords) != 1 {
		return GenAIEvent{}, fmt.Errorf("%w: a log record message holds exactly one record", ErrMalformed)
	}
	return genAIEvent(ld.ResourceLogs[0].ScopeLogs[0].LogRecords[0])
}

// LogRecordID is the Nats-Msg-Id part that tells log records of one span apart: a digest of
// the record, so that a re-export of the same record stores nothing new.
func LogRecordID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
