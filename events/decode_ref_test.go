package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events/internal/jsonscan"
	"github.com/dittolab/ditto/events/internal/wire"
)

// decodeReference is Decode as it was before the fast path: encoding/json for the envelope
// and the payload, with the same checks of strings and keys. FuzzDecodeFast checks that Decode
// agrees with it on every input.
func decodeReference(b []byte) (Envelope, error) {
	if len(b) > MaxEventSize {
		return Envelope{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	if err := checkText(b); err != nil {
		return Envelope{}, err
	}
	var w wire.Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return Envelope{}, fmt.Errorf("%w: trailing data after the event", ErrMalformed)
	}
	e := Envelope{
		Schema: w.Schema, ID: w.ID, Type: Type(w.Type), Time: w.Time, Study: w.Study, Run: w.Run,
		Attempt: w.Attempt, Seq: w.Seq, Source: Source{Kind: SourceKind(w.Source.Kind), ID: w.Source.ID},
		TraceID: w.TraceID, SpanID: w.SpanID, Ignorable: w.Ignorable,
	}
	if e.Type == "" {
		return e, missing("type")
	}
	if len(w.Payload) == 0 || string(w.Payload) == "null" {
		return e, missing("payload")
	}
	p, err := decodePayloadReference(e.Type, e.Schema, w.Payload)
	if err != nil {
		if e.Ignorable && isUnknownType(err) {
			e.Payload = Unknown{Type: e.Type, Raw: w.Payload}
			return e, e.Validate()
		}
		return e, err
	}
	e.Payload = p
	return e, e.Validate()
}

func decodePayloadReference(t Type, version int, raw json.RawMessage) (Payload, error) {
	if version < 1 || version > SchemaVersion {
		return nil, &FieldError{Field: "schema", Err: ErrUnknownVersion, Msg: fmt.Sprintf("version %d (this build reads 1..%d)", version, SchemaVersion)}
	}
	switch t {
	case TypeStudyDefined:
		return unmarshalAs[StudyDefined](raw)
	case TypeRunStarted:
		return unmarshalAs[RunStarted](raw)
	case TypeRunFinished:
		return unmarshalAs[RunFinished](raw)
	case TypePlanProposed:
		return unmarshalAs[PlanProposed](raw)
	case TypePlanAccepted:
		return unmarshalAs[PlanAccepted](raw)
	case TypePlanRejected:
		return unmarshalAs[PlanRejected](raw)
	case TypeStateEntered:
		return unmarshalAs[StateEntered](raw)
	case TypeStateExited:
		return unmarshalAs[StateExited](raw)
	case TypeModelCalled:
		return unmarshalAs[ModelCalled](raw)
	case TypeToolCalled:
		return unmarshalAs[ToolCalled](raw)
	case TypeToolRejected:
		return unmarshalAs[ToolRejected](raw)
	case TypeToolReturned:
		return unmarshalAs[ToolReturned](raw)
	case TypeOutputValidated:
		return unmarshalAs[OutputValidated](raw)
	case TypeOutputInvalid:
		return unmarshalAs[OutputInvalid](raw)
	case TypeRetryScheduled:
		return unmarshalAs[RetryScheduled](raw)
	case TypeRunEscalated:
		return unmarshalAs[RunEscalated](raw)
	case TypeReportPublished:
		return unmarshalAs[ReportPublished](raw)
	case TypeWorkspaceCreated:
		return unmarshalAs[WorkspaceCreated](raw)
	case TypeWorkspaceDiscarded:
		return unmarshalAs[WorkspaceDiscarded](raw)
	case TypeVerificationRan:
		return unmarshalAs[VerificationRan](raw)
	case TypeDiagnosticsDistilled:
		return unmarshalAs[DiagnosticsDistilled](raw)
	case TypeFileChanged:
		return unmarshalAs[FileChanged](raw)
	case TypeContextConfigured:
		return unmarshalAs[ContextConfigured](raw)
	case TypeContextPrepared:
		return unmarshalAs[ContextPrepared](raw)
	case TypeContextElided:
		return unmarshalAs[ContextElided](raw)
	case TypeContextRecalled:
		return unmarshalAs[ContextRecalled](raw)
	case TypeContextSummarized:
		return unmarshalAs[ContextSummarized](raw)
	case TypeContextOverflowed:
		return unmarshalAs[ContextOverflowed](raw)
	case TypePlanUpdated:
		return unmarshalAs[PlanUpdated](raw)
	}
	return nil, &FieldError{Field: "type", Err: ErrUnknownType, Msg: fmt.Sprintf("%q (not marked ignorable)", t)}
}

// unmarshalAs is decodeAs without the fast path.
func unmarshalAs[P Payload](raw json.RawMessage) (Payload, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &FieldError{Field: "payload", Err: ErrMalformed, Msg: err.Error()}
	}
	// The same check of keys as Decode's (strict_test.go tests it on its own).
	if err := checkKeyCase(raw, reflect.TypeFor[P](), "payload"); err != nil {
		return nil, err
	}
	return p, nil
}

// checkSameDecode fails unless Decode and decodeReference return equal envelopes and errors
// with the same text.
func checkSameDecode(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := Decode(data)
	want, wantErr := decodeReference(data)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("Decode(%q) error = %v, want %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) =\n%#v\nwant\n%#v", data, got, want)
	}
	if gotErr != nil {
		return
	}
	// The payload a store keeps: the member's bytes as encoding/json bounds them.
	_, payload, err := DecodeWithPayload(data)
	var w wire.Envelope
	if jerr := json.Unmarshal(data, &w); err != nil || jerr != nil {
		t.Fatalf("DecodeWithPayload(%q): %v; encoding/json: %v", data, err, jerr)
	}
	if !bytes.Equal(payload, w.Payload) {
		t.Fatalf("DecodeWithPayload(%q) payload = %q, want %q", data, payload, w.Payload)
	}
}

// fastPathSeeds are inputs at the edges of what the fast path reads itself.
var fastPathSeeds = []string{
	// The in-order path's edges (wire.scanInOrder): white space around and inside the payload,
	// optional members in and out of their places, a payload that is not one value up to the
	// closing brace, keys that only begin like the expected ones.
	"{\"schema\":1,\"id\":\"x\",\"type\":\"state.entered\",\"time\":\"2026-11-30T09:00:00Z\",\"study\":\"s\",\"run\":\"r\",\"attempt\":1,\"seq\":1,\"source\":{\"kind\":\"harness\",\"id\":\"w\"},\"payload\": {\"state\":\"A\"}\t}\n",
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"} }`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"trace_id":"t","span_id":"u","ignorable":false,"payload":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"span_id":"u","trace_id":"t","payload":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"},"payload":{"state":"B"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"},"trace_id":"t"}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"}"}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w","id":"v"},"payload":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":"A"}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":}`,
	`{"schema": 1,"id": "x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payloads":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}}`,
	` {"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}} `,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}}]`,
	`{"schema":1,"ID":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"State":"A"}}`,
	`{"schema":1,"id":"x","id":"y","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness"},"source":{"id":"w"},"payload":{"state":"A","state":"B"}}`,
	`{"schema":1.0,"id":"x\u0041","type":"state.entered","time":"2026-11-30T09:00:00+01:00","study":"s","run":"r","attempt":-0,"seq":1e0,"source":{"kind":"harness","id":"w"},"payload":{"state":"\ud800"}}`,
	`{"schema":1,"id":null,"type":"state.entered","time":null,"study":"s","run":"r","attempt":1,"seq":99999999999999999999,"source":null,"payload":{"state":null}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","components":[],"seed":null,"sampling":{"temperature":1e400},"graph":{"A":null,"A":["B"],"B":[]},"start":"A"}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":null}}`,
	`{"schema":1,"id":"x","type":"tool.returned","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","ok":true,"output":[1, 2 ,{"a" : "\u00e9"}],"duration_ms":-0.0}}`,
	`{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":{"mood":"calm"}}`,
	`{"schema":1,"id":"x","type":"study.defined","time":"2026-11-30T09:00:00Z","study":"s","run":"_study","attempt":1,"seq":0,"source":{"kind":"harness","id":"w"},"payload":{"name":"n","cells":[{"task":"t","model":"m","condition":"c","runs":2}],"expected_runs":2,"simulated":[],"spec":{"b":1}}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","components":null,"seed":7,"sampling":{"temperature":0.2,"top_p":1,"max_tokens":5},"graph":{"A":["B"],"B":null},"start":"A","simulated":true}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","sampling":null,"graph":null,"Task":"u"}}`,
	`{"schema":1,"id":"x","type":"run.finished","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":2,"source":{"kind":"harness","id":"w"},"payload":{"status":"succeeded","success":true,"output":"ok","totals":{"prompt_tokens":10,"completion_tokens":2,"model_calls":1,"tool_calls":0,"retries":0,"plan_reprompts":0,"rejected_tool_calls":0,"latency_ms":12.5}}}`,
	`{"schema":1,"id":"x","type":"plan.accepted","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":2,"source":{"kind":"harness","id":"w"},"payload":{"steps":[{"state":"A","tool":"a"},{"tool":"b","state":"B"}]}}`,
	`{"schema":1,"id":"x","type":"plan.accepted","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":2,"source":{"kind":"harness","id":"w"},"payload":{"steps":null}}`,
	`{"schema":1,"id":"x","type":"study.defined","time":"2026-11-30T09:00:00Z","study":"s","run":"_study","attempt":1,"seq":0,"source":{"kind":"harness","id":"w"},"payload":{"name":"n","cells":[],"expected_runs":0}}`,
	`{"schema":1,"id":"x","type":"model.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":3,"source":{"kind":"harness","id":"w"},"payload":{"model":"m","prompt_tokens":-1,"seed":null,"latency_ms":1e2}}`,
	// Payloads at the edges of what the scan vouches for as checked (jsonscan.SkipClean): a
	// repeated plain key deep in a tool's arguments, after many keys, deeper than it follows.
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"a":[{"b":1,"c":{"d":1,"d":2}}]}}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1,"a":2}}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":` + strings.Repeat(`[`, 40) + `{"a":1,"a":2}` + strings.Repeat(`]`, 40) + `}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"s":"\ud800"},"state":"A"}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"ab":1,"a\u0062":2}}}`,
	"{\"schema\":1,\"id\":\"x\",\"type\":\"tool.called\",\"time\":\"2026-11-30T09:00:00Z\",\"study\":\"s\",\"run\":\"r\",\"attempt\":1,\"seq\":1,\"source\":{\"kind\":\"harness\",\"id\":\"w\"},\"payload\":{\"call_id\":\"c\",\"tool\":\"t\",\"args\":{\"\xc3\xa9\":[\"\xe2\x82\"]}}}",
	`{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":{"mood":"calm","mood":"sad"}}`,
	// Payloads the scan only bounds by their brackets (jsonscan.SkipBounds): brackets that
	// balance around invalid JSON, brackets and quotes inside strings, a payload that takes
	// the envelope's closing brace, strings with escapes in a payload's plan.
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A",}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state" "A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A\n]}\"{"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}]}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"s":"a}\"]{[","t":[1,{"u":"]"}]}}}`,
	`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"call_id":"c","tool":"t","args":{"s":[1,}}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","graph":{"A":["B"],"\u0041":[]},"start":"A"}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","graph":{"A":["B"],"A":[]},"start":"A"}}`,
	`{"schema":1,"id":"x","type":"run.started","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"task":"t","model":"m","condition":"c","graph":{"A":["B"],"B":["\ud800"]},"start":"A"}}`,
	`{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":{"mood":}}`,
	`{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":[1 2]}`,
	`{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":{"mood":"]"}}`,
	`{"schema":9,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":"A"}}`,
	`{"schema":1,"id":"x","type":"state.entered","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"harness","id":"w"},"payload":{"state":""}}`,
	"{\"schema\":1,\"id\":\"x\xff\",\"type\":\"state.entered\",\"time\":\"2026-11-30T09:00:00Z\",\"study\":\"s\",\"run\":\"r\",\"attempt\":1,\"seq\":1,\"source\":{\"kind\":\"harness\",\"id\":\"w\"},\"payload\":{\"state\":\"\xc3\xa9\"}}",
}

// TestDecodeMatchesReference checks the fast path against encoding/json on the golden events
// and on inputs at its edges (each also seeds FuzzDecodeFast).
func TestDecodeMatchesReference(t *testing.T) {
	files := goldenFiles(t)
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checkSameDecode(t, raw)
		w, ok := wire.Scan(bytes.TrimSpace(raw), wireNames, nil)
		if !ok {
			t.Errorf("golden %s does not take the fast path", name)
			continue
		}
		if !payloadTakesFastPath(Type(w.Type), w.Payload) {
			t.Errorf("the payload of golden %s does not take the fast path", name)
		}
	}
	for _, s := range fastPathSeeds {
		checkSameDecode(t, []byte(s))
	}
}

// payloadTakesFastPath reports whether jsonscan reads raw as a payload of type t.
func payloadTakesFastPath(t Type, raw []byte) bool {
	ok := false
	switch t {
	case TypeStudyDefined:
		_, ok = jsonscan.Decode[StudyDefined](raw)
	case TypeRunStarted:
		_, ok = jsonscan.Decode[RunStarted](raw)
	case TypeRunFinished:
		_, ok = jsonscan.Decode[RunFinished](raw)
	case TypePlanProposed:
		_, ok = jsonscan.Decode[PlanProposed](raw)
	case TypePlanAccepted:
		_, ok = jsonscan.Decode[PlanAccepted](raw)
	case TypePlanRejected:
		_, ok = jsonscan.Decode[PlanRejected](raw)
	case TypeStateEntered:
		_, ok = jsonscan.Decode[StateEntered](raw)
	case TypeStateExited:
		_, ok = jsonscan.Decode[StateExited](raw)
	case TypeModelCalled:
		_, ok = jsonscan.Decode[ModelCalled](raw)
	case TypeToolCalled:
		_, ok = jsonscan.Decode[ToolCalled](raw)
	case TypeToolRejected:
		_, ok = jsonscan.Decode[ToolRejected](raw)
	case TypeToolReturned:
		_, ok = jsonscan.Decode[ToolReturned](raw)
	case TypeOutputValidated:
		_, ok = jsonscan.Decode[OutputValidated](raw)
	case TypeOutputInvalid:
		_, ok = jsonscan.Decode[OutputInvalid](raw)
	case TypeRetryScheduled:
		_, ok = jsonscan.Decode[RetryScheduled](raw)
	case TypeRunEscalated:
		_, ok = jsonscan.Decode[RunEscalated](raw)
	case TypeReportPublished:
		_, ok = jsonscan.Decode[ReportPublished](raw)
	case TypeWorkspaceCreated:
		_, ok = jsonscan.Decode[WorkspaceCreated](raw)
	case TypeWorkspaceDiscarded:
		_, ok = jsonscan.Decode[WorkspaceDiscarded](raw)
	case TypeVerificationRan:
		_, ok = jsonscan.Decode[VerificationRan](raw)
	case TypeDiagnosticsDistilled:
		_, ok = jsonscan.Decode[DiagnosticsDistilled](raw)
	case TypeFileChanged:
		_, ok = jsonscan.Decode[FileChanged](raw)
	case TypeContextConfigured:
		_, ok = jsonscan.Decode[ContextConfigured](raw)
	case TypeContextPrepared:
		_, ok = jsonscan.Decode[ContextPrepared](raw)
	case TypeContextElided:
		_, ok = jsonscan.Decode[ContextElided](raw)
	case TypeContextRecalled:
		_, ok = jsonscan.Decode[ContextRecalled](raw)
	case TypeContextSummarized:
		_, ok = jsonscan.Decode[ContextSummarized](raw)
	case TypeContextOverflowed:
		_, ok = jsonscan.Decode[ContextOverflowed](raw)
	case TypePlanUpdated:
		_, ok = jsonscan.Decode[PlanUpdated](raw)
	}
	return ok
}

// addCodecSeeds seeds the codec's differential fuzz tests with every golden event and the
// fast path's edge cases.
func addCodecSeeds(f *testing.F) {
	for _, name := range goldenFiles(f) {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	for _, s := range fastPathSeeds {
		f.Add([]byte(s))
	}
}

// FuzzDecodeFast is a differential fuzz test: Decode (fast path with encoding/json fallback)
// and decodeReference (encoding/json only) agree on every input, errors included.
// It runs in make fuzz; for a longer search: go test -run '^$' -fuzz FuzzDecodeFast -fuzztime 5000000x ./events
func FuzzDecodeFast(f *testing.F) {
	addCodecSeeds(f)
	f.Fuzz(checkSameDecode)
}

// The fast path checks only the payload of an envelope it reads itself (jsonscan.CheckNested at
// depth 1): around the nesting limit, with faults in the payload or the envelope, its results
// and errors are the reference's.
func TestDecodeChecksPayloadAsNested(t *testing.T) {
	const head = `{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":`
	for depth := 505; depth <= 515; depth++ {
		payload := `{"x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
		checkSameDecode(t, []byte(head+payload+`}`))
	}
	for _, payload := range []string{
		`{"mood":"\ud800"}`, "{\"mood\":\"\xff\"}", `{"mood":"a","mood":"b"}`, `{"m":{"a":1,"a":2}}`,
		`{"mood":"calm"}`, `{"mood":"\u00e9"}`,
	} {
		checkSameDecode(t, []byte(head+payload+`}`))
		// The same with an escape in the envelope, which the fast path leaves to encoding/json.
		checkSameDecode(t, []byte(strings.Replace(head, `"run":"r"`, `"run":"\u0072"`, 1)+payload+`}`))
		checkSameDecode(t, []byte(strings.Replace(head, `"run":"r"`, `"run":"\ud800"`, 1)+payload+`}`))
	}
}
