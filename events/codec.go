package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// wire is the JSON shape of an envelope.
type wire struct {
	Schema    int             `json:"schema"`
	ID        string          `json:"id"`
	Type      Type            `json:"type"`
	Time      time.Time       `json:"time"`
	Study     string          `json:"study"`
	Run       string          `json:"run"`
	Attempt   int             `json:"attempt"`
	Seq       int64           `json:"seq"`
	Source    Source          `json:"source"`
	TraceID   string          `json:"trace_id,omitempty"`
	SpanID    string          `json:"span_id,omitempty"`
	Ignorable bool            `json:"ignorable,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

// Encode validates e and returns its JSON form. The result is at most MaxEventSize bytes.
func Encode(e *Envelope) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	var payload []byte
	if u, ok := e.Payload.(Unknown); ok {
		payload = u.Raw
	} else {
		var err error
		if payload, err = marshalNoHTMLEscape(e.Payload); err != nil {
			return nil, fmt.Errorf("events: encode %s payload: %w", e.Type, err)
		}
	}
	w := wire{
		Schema: e.Schema, ID: e.ID, Type: e.Type, Time: e.Time.UTC(), Study: e.Study, Run: e.Run,
		Attempt: e.Attempt, Seq: e.Seq, Source: e.Source, TraceID: e.TraceID, SpanID: e.SpanID,
		Ignorable: e.Ignorable, Payload: payload,
	}
	var b []byte
	ok := false
	if _, unknown := e.Payload.(Unknown); !unknown { // an Unknown payload may need compacting
		b, ok = appendEnvelope(make([]byte, 0, len(payload)+320), &w)
	}
	if !ok {
		var err error
		if b, err = marshalNoHTMLEscape(w); err != nil {
			return nil, fmt.Errorf("events: encode envelope: %w", err)
		}
	}
	if len(b) > MaxEventSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	return b, nil
}

// marshalNoHTMLEscape is json.Marshal without HTML escaping. json.Marshal rewrites '<', '>',
// '&', U+2028 and U+2029 inside json.RawMessage values as \u escapes, which would turn canonical
// arguments and outputs into non-canonical ones on the wire.
func marshalNoHTMLEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Decode parses and validates one encoded event. Errors wrap ErrMalformed, ErrTooLarge,
// ErrUnknownType, ErrUnknownVersion or a *FieldError naming the field at fault. An event of an
// unknown type decodes without error, with an Unknown payload, only when it is marked ignorable.
func Decode(b []byte) (Envelope, error) {
	if len(b) > MaxEventSize {
		return Envelope{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	w, ok := scanEnvelope(b)
	if !ok {
		// Anything the fast path does not read exactly as encoding/json would: let
		// encoding/json decide, with its own errors.
		w = wire{}
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&w); err != nil {
			return Envelope{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if dec.More() {
			return Envelope{}, fmt.Errorf("%w: trailing data after the event", ErrMalformed)
		}
	}
	e := Envelope{
		Schema: w.Schema, ID: w.ID, Type: w.Type, Time: w.Time, Study: w.Study, Run: w.Run,
		Attempt: w.Attempt, Seq: w.Seq, Source: w.Source, TraceID: w.TraceID, SpanID: w.SpanID,
		Ignorable: w.Ignorable,
	}
	if e.Type == "" {
		return e, missing("type")
	}
	if len(w.Payload) == 0 || string(w.Payload) == "null" {
		return e, missing("payload")
	}
	p, err := decodePayload(e.Type, e.Schema, w.Payload)
	if err != nil {
		if e.Ignorable && isUnknownType(err) {
			// A copy: the fast path's payload aliases b, which the caller may reuse.
			e.Payload = Unknown{Type: e.Type, Raw: bytes.Clone(w.Payload)}
			return e, e.Validate()
		}
		return e, err
	}
	e.Payload = p
	return e, e.Validate()
}

func isUnknownType(err error) bool {
	fe, ok := err.(*FieldError)
	return ok && fe.Err == ErrUnknownType
}

// decodePayload switches on (type, version). Version 1 is the only version so far; when a
// payload changes shape, add a case for the new version and keep the old one decoding.
func decodePayload(t Type, version int, raw json.RawMessage) (Payload, error) {
	if version < 1 || version > SchemaVersion {
		return nil, &FieldError{Field: "schema", Err: ErrUnknownVersion, Msg: fmt.Sprintf("version %d (this build reads 1..%d)", version, SchemaVersion)}
	}
	if p, ok := scanPayload(t, raw); ok {
		return p, nil
	}
	switch t {
	case TypeStudyDefined:
		return decodeAs[StudyDefined](raw)
	case TypeRunStarted:
		return decodeAs[RunStarted](raw)
	case TypeRunFinished:
		return decodeAs[RunFinished](raw)
	case TypePlanProposed:
		return decodeAs[PlanProposed](raw)
	case TypePlanAccepted:
		return decodeAs[PlanAccepted](raw)
	case TypePlanRejected:
		return decodeAs[PlanRejected](raw)
	case TypeStateEntered:
		return decodeAs[StateEntered](raw)
	case TypeStateExited:
		return decodeAs[StateExited](raw)
	case TypeModelCalled:
		return decodeAs[ModelCalled](raw)
	case TypeToolCalled:
		return decodeAs[ToolCalled](raw)
	case TypeToolRejected:
		return decodeAs[ToolRejected](raw)
	case TypeToolReturned:
		return decodeAs[ToolReturned](raw)
	case TypeOutputValidated:
		return decodeAs[OutputValidated](raw)
	case TypeOutputInvalid:
		return decodeAs[OutputInvalid](raw)
	case TypeRetryScheduled:
		return decodeAs[RetryScheduled](raw)
	case TypeRunEscalated:
		return decodeAs[RunEscalated](raw)
	case TypeReportPublished:
		return decodeAs[ReportPublished](raw)
	}
	return nil, &FieldError{Field: "type", Err: ErrUnknownType, Msg: fmt.Sprintf("%q (not marked ignorable)", t)}
}

func decodeAs[P Payload](raw json.RawMessage) (Payload, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &FieldError{Field: "payload", Err: ErrMalformed, Msg: err.Error()}
	}
	return p, nil
}
