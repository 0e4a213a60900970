package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/dittolab/ditto/events/internal/jsonscan"
	"github.com/dittolab/ditto/events/internal/wire"
)

// Encode validates e and returns its JSON form. The result is at most MaxEventSize bytes.
func Encode(e *Envelope) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	u, unknown := e.Payload.(Unknown)
	var payload []byte
	if unknown {
		payload = u.Raw
	} else {
		var err error
		if payload, err = marshalNoHTMLEscape(e.Payload); err != nil {
			return nil, fmt.Errorf("events: encode %s payload: %w", e.Type, err)
		}
	}
	w := toWire(e, payload)
	var b []byte
	ok := false
	if !unknown { // an Unknown payload may need compacting, which only encoding/json does
		b, ok = wire.Append(make([]byte, 0, len(payload)+320), &w)
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
	// Go strings with bytes that are not UTF-8 were written as U+FFFD; raw JSON values (an
	// Unknown payload, arguments, outputs) are written as given and may still hold a lone
	// surrogate escape or a repeated key, which no reader of the event may see.
	if err := checkText(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkText refuses JSON that encoding/json reads but that another reader of the same bytes
// would refuse or read differently (see jsonscan.Check), naming the value at fault.
func checkText(b []byte) error {
	ce := jsonscan.Check(b)
	if ce == nil {
		return nil
	}
	field := ce.Path
	if field == "" {
		field = "event"
	}
	switch ce.Fault {
	case jsonscan.FaultUTF8:
		return &FieldError{Field: field, Err: ErrInvalidText, Msg: fmt.Sprintf("bytes that are not UTF-8 at byte %d", ce.Offset)}
	case jsonscan.FaultSurrogate:
		return &FieldError{Field: field, Err: ErrInvalidText, Msg: fmt.Sprintf(`a lone UTF-16 surrogate escape (\uD800-\uDFFF without its pair) at byte %d`, ce.Offset)}
	case jsonscan.FaultDuplicateKey:
		return &FieldError{Field: field, Err: ErrDuplicateKey, Msg: fmt.Sprintf("the key appears twice in one object (at byte %d)", ce.Offset)}
	}
	return &FieldError{Field: field, Err: ErrMalformed, Msg: ce.Error()}
}

func toWire(e *Envelope, payload []byte) wire.Envelope {
	return wire.Envelope{
		Schema: e.Schema, ID: e.ID, Type: string(e.Type), Time: e.Time.UTC(), Study: e.Study,
		Run: e.Run, Attempt: e.Attempt, Seq: e.Seq,
		Source:  wire.Source{Kind: string(e.Source.Kind), ID: e.Source.ID},
		TraceID: e.TraceID, SpanID: e.SpanID, Ignorable: e.Ignorable, Payload: payload,
	}
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
//
// Decode is stricter than encoding/json: a string anywhere in the event (a key or a value,
// payload included) that holds bytes that are not UTF-8 or a lone surrogate escape is refused
// with ErrInvalidText, an object with a repeated key with ErrDuplicateKey, and a payload key
// that differs from a field's name in case alone with ErrKeyCase (all kinds of ErrMalformed),
// each in a *FieldError naming the value. encoding/json would read the first as U+FFFD, the
// second as its last value and the third as the field, while a store that keeps the event's
// bytes (DuckDB) refuses the first, reads the first value of the second and reads the third as
// another key.
func Decode(b []byte) (Envelope, error) {
	e, _, err := DecodeWithPayload(b)
	return e, err
}

// DecodeWithPayload is Decode that also returns the bytes of the event's payload member as
// they are in b (not re-encoded; they may alias b): what a store keeps so that it can hand the
// producer's payload back unchanged and decode it again with Envelope.DecodePayload.
func DecodeWithPayload(b []byte) (Envelope, []byte, error) {
	if len(b) > MaxEventSize {
		return Envelope{}, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	// Read by the fast path, the envelope outside its payload holds nothing that checkText
	// refuses (see wire.Scan), so checking the payload alone finds what checking b would: the
	// envelope's bytes are not walked twice. The scan only bounds the payload; the payload's
	// plan then reads it whole and, when it finds it clean (plain strings and keys, none
	// repeated), it needs no check: the usual event's payload is walked once. Any other payload
	// is read as a value (the scan holds only if it is one) and checked unless clean. On a
	// fault, b is checked whole for the error (its path and offset are b's).
	strs := sharedStrings.Get().(*jsonscan.Strings)
	defer sharedStrings.Put(strs)
	w, ok := wire.Scan(b, wireNames, strs)
	var p Payload
	checked, read := false, false
	if ok {
		var err error
		p, err = decodePayload(Type(w.Type), w.Schema, w.Payload, payloadDecoding{strs: strs, cleanOnly: true})
		checked, read = err == nil, err == nil
		if !read {
			var clean bool
			if ok, clean = scanPayload(w.Payload); ok {
				checked = clean || jsonscan.CheckNested(w.Payload, 1) == nil
			}
		}
	}
	if !checked {
		if err := checkText(b); err != nil {
			return Envelope{}, nil, err
		}
	}
	if !ok {
		// Anything the fast path does not read exactly as encoding/json would: let
		// encoding/json decide, with its own errors.
		var err error
		if w, err = decodeWire(b); err != nil {
			return Envelope{}, nil, err
		}
	}
	e := Envelope{
		Schema: w.Schema, ID: w.ID, Type: Type(w.Type), Time: w.Time, Study: w.Study, Run: w.Run,
		Attempt: w.Attempt, Seq: w.Seq, Source: Source{Kind: SourceKind(w.Source.Kind), ID: w.Source.ID},
		TraceID: w.TraceID, SpanID: w.SpanID, Ignorable: w.Ignorable,
	}
	if e.Type == "" {
		return e, nil, missing("type")
	}
	if read {
		// What setPayload would do with the payload read above.
		e.Payload = p
		if err := e.Validate(); err != nil {
			return e, nil, err
		}
		return e, w.Payload, nil
	}
	if err := e.setPayload(w.Payload, strs); err != nil {
		return e, nil, err
	}
	return e, w.Payload, nil
}

// scanPayload reads a payload that wire.Scan bounded as one JSON value, reporting whether it
// is one and whether it is clean (jsonscan.SkipClean).
func scanPayload(raw []byte) (ok, clean bool) {
	s := jsonscan.New(raw)
	_, clean = s.SkipClean()
	s.End()
	return !s.Failed(), clean && !s.Failed()
}

// sharedStrings holds the tables by which decoding shares the strings of values that repeat
// from one event to the next (jsonscan.Strings): a study, a run, a state or tool name is
// allocated once per table rather than once per event. A table is owned by one decoding at a
// time; the pool keeps about one per processor.
var sharedStrings = sync.Pool{New: func() any { return new(jsonscan.Strings) }}

// wireNames holds the event types and source kinds, for wire.Scan to share instead of
// allocating them for each event it reads.
var wireNames = func() map[string]string {
	m := map[string]string{string(SourceHarness): string(SourceHarness), string(SourceProduction): string(SourceProduction)}
	for _, t := range Types() {
		m[string(t)] = string(t)
	}
	return m
}()

// decodeWire reads an envelope with encoding/json (apart, so that only this path allocates
// the Envelope it fills).
func decodeWire(b []byte) (wire.Envelope, error) {
	var w wire.Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	// Only JSON white space may follow. Not dec.More, which reports false before a ']' or '}'
	// (it asks whether an array or object goes on), so that "{…}]" passed as an event.
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return w, fmt.Errorf("%w: trailing data after the event", ErrMalformed)
	}
	return w, nil
}

// DecodeCanonicalizing is Decode for events written by hand or by other tools: the JSON values
// an event carries for comparison (tool arguments and outputs, a run's input and output, a
// study's spec) may be any valid JSON, in any key order and spacing, and are rewritten in their
// canonical form (RFC 8785) before the event is validated. Canonical form is ditto's storage
// form, not a client's burden. canonicalized reports whether a value was rewritten: the event
// then differs from b, and a store must keep Encode(&e), not b. A value that is not valid JSON
// (or has no canonical form: duplicate keys, a number beyond a double) is still an error
// wrapping ErrNotCanonical, naming its field. Other errors are Decode's.
func DecodeCanonicalizing(b []byte) (e Envelope, canonicalized bool, err error) {
	if len(b) > MaxEventSize {
		return Envelope{}, false, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), MaxEventSize)
	}
	if err := checkText(b); err != nil {
		return Envelope{}, false, err
	}
	w, ok := wire.Scan(b, wireNames, nil)
	if ok {
		ok, _ = scanPayload(w.Payload) // the scan holds only if the payload is one value
	}
	if !ok {
		if w, err = decodeWire(b); err != nil {
			return Envelope{}, false, err
		}
	}
	e = Envelope{
		Schema: w.Schema, ID: w.ID, Type: Type(w.Type), Time: w.Time, Study: w.Study, Run: w.Run,
		Attempt: w.Attempt, Seq: w.Seq, Source: Source{Kind: SourceKind(w.Source.Kind), ID: w.Source.ID},
		TraceID: w.TraceID, SpanID: w.SpanID, Ignorable: w.Ignorable,
	}
	if e.Type == "" {
		return e, false, missing("type")
	}
	if len(w.Payload) == 0 || string(w.Payload) == "null" {
		return e, false, missing("payload")
	}
	p, err := decodePayload(e.Type, e.Schema, w.Payload, payloadDecoding{})
	if err != nil {
		if e.Ignorable && isUnknownType(err) {
			e.Payload = Unknown{Type: e.Type, Raw: bytes.Clone(w.Payload)}
			return e, false, e.Validate()
		}
		return e, false, err
	}
	if p, canonicalized, err = canonicalize(p); err != nil {
		return e, false, err
	}
	e.Payload = p
	return e, canonicalized, e.Validate()
}

// canonicalize rewrites the JSON values of a payload in canonical form and reports whether any
// changed.
func canonicalize(p Payload) (Payload, bool, error) {
	changed := false
	canon := func(field string, raw *json.RawMessage) error {
		if len(*raw) == 0 {
			return nil
		}
		c, err := Canonical(*raw)
		if err != nil {
			return &FieldError{Field: field, Err: ErrNotCanonical, Msg: err.Error()}
		}
		if !bytes.Equal(c, *raw) {
			*raw, changed = c, true
		}
		return nil
	}
	var err error
	switch v := p.(type) {
	case ToolCalled:
		err = canon("payload.args", &v.Args)
		p = v
	case ToolRejected:
		err = canon("payload.args", &v.Args)
		p = v
	case ToolReturned:
		err = canon("payload.output", &v.Output)
		p = v
	case RunFinished:
		err = canon("payload.output", &v.Output)
		p = v
	case RunStarted:
		err = canon("payload.input", &v.Input)
		p = v
	case StudyDefined:
		err = canon("payload.spec", &v.Spec)
		p = v
	}
	return p, changed, err
}

// DecodePayload sets e.Payload from raw, the JSON of a payload of type e.Type written with
// schema version e.Schema, as Decode reads the payload member of an event, then validates e.
// It is for readers that keep an event's envelope fields apart from its payload (a table's
// columns) and rebuild the event from them. An unknown type is an error unless e is
// Ignorable, and then the payload is Unknown, holding a copy of raw. Errors are Decode's.
func (e *Envelope) DecodePayload(raw []byte) error {
	if err := checkText(raw); err != nil {
		if fe, ok := err.(*FieldError); ok && fe.Field != "event" {
			fe.Field = "payload." + fe.Field
		} else if ok {
			fe.Field = "payload"
		}
		return err
	}
	return e.setPayload(raw, nil)
}

// setPayload is DecodePayload for raw that checkText has passed, its strings shared through
// strs (nil: allocated).
func (e *Envelope) setPayload(raw []byte, strs *jsonscan.Strings) error {
	if len(raw) == 0 || string(raw) == "null" {
		return missing("payload")
	}
	p, err := decodePayload(e.Type, e.Schema, raw, payloadDecoding{strs: strs})
	if err != nil {
		if e.Ignorable && isUnknownType(err) {
			// A copy: raw may alias a buffer the caller reuses.
			e.Payload = Unknown{Type: e.Type, Raw: bytes.Clone(raw)}
			return e.Validate()
		}
		return err
	}
	e.Payload = p
	return e.Validate()
}

func isUnknownType(err error) bool {
	fe, ok := err.(*FieldError)
	return ok && fe.Err == ErrUnknownType
}

// decodePayload switches on (type, version). Versions 2 and 3 only added optional members, so
// one payload type reads every version (Validate refuses, by checkVersion, an earlier version
// using what a later one added); when a payload changes shape, add a case for the new version
// and keep the old one decoding.
func decodePayload(t Type, version int, raw []byte, d payloadDecoding) (Payload, error) {
	if version < 1 || version > SchemaVersion {
		return nil, &FieldError{Field: "schema", Err: ErrUnknownVersion, Msg: fmt.Sprintf("version %d (this build reads 1..%d)", version, SchemaVersion)}
	}
	switch t {
	case TypeStudyDefined:
		return decodeAs[StudyDefined](raw, d)
	case TypeRunStarted:
		return decodeAs[RunStarted](raw, d)
	case TypeRunFinished:
		return decodeAs[RunFinished](raw, d)
	case TypePlanProposed:
		return decodeAs[PlanProposed](raw, d)
	case TypePlanAccepted:
		return decodeAs[PlanAccepted](raw, d)
	case TypePlanRejected:
		return decodeAs[PlanRejected](raw, d)
	case TypeStateEntered:
		return decodeAs[StateEntered](raw, d)
	case TypeStateExited:
		return decodeAs[StateExited](raw, d)
	case TypeModelCalled:
		return decodeAs[ModelCalled](raw, d)
	case TypeToolCalled:
		return decodeAs[ToolCalled](raw, d)
	case TypeToolRejected:
		return decodeAs[ToolRejected](raw, d)
	case TypeToolReturned:
		return decodeAs[ToolReturned](raw, d)
	case TypeOutputValidated:
		return decodeAs[OutputValidated](raw, d)
	case TypeOutputInvalid:
		return decodeAs[OutputInvalid](raw, d)
	case TypeRetryScheduled:
		return decodeAs[RetryScheduled](raw, d)
	case TypeRunEscalated:
		return decodeAs[RunEscalated](raw, d)
	case TypeReportPublished:
		return decodeAs[ReportPublished](raw, d)
	case TypeWorkspaceCreated:
		return decodeAs[WorkspaceCreated](raw, d)
	case TypeWorkspaceDiscarded:
		return decodeAs[WorkspaceDiscarded](raw, d)
	case TypeVerificationRan:
		return decodeAs[VerificationRan](raw, d)
	case TypeDiagnosticsDistilled:
		return decodeAs[DiagnosticsDistilled](raw, d)
	case TypeFileChanged:
		return decodeAs[FileChanged](raw, d)
	case TypeContextConfigured:
		return decodeAs[ContextConfigured](raw, d)
	case TypeContextPrepared:
		return decodeAs[ContextPrepared](raw, d)
	case TypeContextElided:
		return decodeAs[ContextElided](raw, d)
	case TypeContextRecalled:
		return decodeAs[ContextRecalled](raw, d)
	case TypeContextSummarized:
		return decodeAs[ContextSummarized](raw, d)
	case TypeContextOverflowed:
		return decodeAs[ContextOverflowed](raw, d)
	case TypePlanUpdated:
		return decodeAs[PlanUpdated](raw, d)
	}
	return nil, &FieldError{Field: "type", Err: ErrUnknownType, Msg: fmt.Sprintf("%q (not marked ignorable)", t)}
}

// payloadDecoding says how decodePayload reads a payload.
type payloadDecoding struct {
	strs *jsonscan.Strings // shares the payload's strings (nil: allocated)
	// cleanOnly: read only by the fast path, and only a payload it finds clean (see
	// jsonscan.DecodeChecked); any other is errNotClean, for a full reading after a check.
	cleanOnly bool
}

// errNotClean: the payload is left to a full reading (see payloadDecoding.cleanOnly).
var errNotClean = errors.New("events: payload not read by the fast path")

// decodeAs reads a payload of type P: with the fast path when it reads raw exactly as
// encoding/json would, else with encoding/json and its errors.
func decodeAs[P Payload](raw []byte, d payloadDecoding) (Payload, error) {
	p, ok, clean := jsonscan.DecodeChecked[P](raw, d.strs)
	switch {
	case d.cleanOnly && ok && clean:
		return p, nil
	case d.cleanOnly:
		return nil, errNotClean
	case ok:
		return p, nil
	}
	return unmarshalPayload[P](raw)
}

// unmarshalPayload reads a payload of type P with encoding/json (apart, so that only this path
// allocates the P it fills), refusing keys that encoding/json alone reads as a field
// (checkKeyCase).
func unmarshalPayload[P Payload](raw []byte) (Payload, error) {
	var p P
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &FieldError{Field: "payload", Err: ErrMalformed, Msg: err.Error()}
	}
	// The fast path reads only keys that are a field's exact name; encoding/json also takes a
	// key that differs from one in case alone, which the stored bytes do not.
	if err := checkKeyCase(raw, reflect.TypeFor[P](), "payload"); err != nil {
		return nil, err
	}
	return p, nil
}
