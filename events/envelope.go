package events

import (
	"fmt"
	"time"
)

// SchemaVersion is the version New writes. Decode also accepts every earlier version.
//
// Version 2 adds the run statuses errored (with RunFinished.Cause) and overflow, and
// RunStarted.InputKey and Input. Everything else is as in version 1, and an event of version
// 1 reads as it always did; a version 1 event that uses what version 2 added is invalid.
//
// Version 3 adds the server that served a tool call (ToolCalled.Server, ToolReturned.Server:
// an MCP server's name and version). An event of an earlier version that names a server is
// invalid.
const SchemaVersion = 3

// MaxEventSize is the largest encoded event accepted, envelope included: 1 MiB, the default
// max_payload of a NATS server, so that every valid event can be published as one message.
const MaxEventSize = 1 << 20

// StudyRun is the run token of study-level events (study.defined, report.published), which
// belong to no agent run.
const StudyRun = "_study"

// SourceKind says who emitted an event.
type SourceKind string

// Source kinds.
const (
	SourceHarness    SourceKind = "harness"
	SourceProduction SourceKind = "production"
)

// Source identifies the emitter of an event.
type Source struct {
	Kind SourceKind `json:"kind"`
	ID   string     `json:"id"` // worker id, service name or agent name; never a secret
}

// Envelope is one event: the metadata every event carries plus its typed payload.
type Envelope struct {
	Schema  int       `json:"schema"`
	ID      string    `json:"id"` // sortable unique id (see NewID); also the Nats-Msg-Id
	Type    Type      `json:"type"`
	Time    time.Time `json:"time"`
	Study   string    `json:"study"`
	Run     string    `json:"run"`
	Attempt int       `json:"attempt"` // 1 for the first attempt of a run; a redelivered job is a new attempt
	Seq     int64     `json:"seq"`     // per (run, attempt) sequence number, from 1, gapless
	Source  Source    `json:"source"`
	TraceID string    `json:"trace_id,omitempty"` // OpenTelemetry trace id (32 hex), optional
	SpanID  string    `json:"span_id,omitempty"`  // OpenTelemetry span id (16 hex), optional
	// Ignorable marks an event that readers which do not know its type may skip instead of
	// failing (as Temporal's WorkerMayIgnore). Producers set it on experimental types.
	Ignorable bool    `json:"ignorable,omitempty"`
	Payload   Payload `json:"-"` // encoded as "payload"
}

// Payload is the typed body of an event. Each payload type knows its event type and checks its
// own required fields.
type Payload interface {
	EventType() Type
	Validate() error
}

// Unknown is the payload of an ignorable event whose type this version does not know.
type Unknown struct {
	Type Type   `json:"-"`
	Raw  []byte `json:"-"`
}

// EventType implements Payload.
func (u Unknown) EventType() Type { return u.Type }

// Validate implements Payload.
func (Unknown) Validate() error { return nil }

// New builds an envelope for a payload with a fresh id, the current schema version and the
// given time. Callers fill Seq, Attempt, Source and any trace ids.
func New(study, run string, t time.Time, p Payload) Envelope {
	return Envelope{
		Schema:  SchemaVersion,
		ID:      NewID(t),
		Type:    p.EventType(),
		Time:    t.UTC(),
		Study:   study,
		Run:     run,
		Attempt: 1,
		Payload: p,
	}
}

// Validate checks the envelope and its payload, returning a *FieldError naming the first
// field at fault.
func (e *Envelope) Validate() error {
	if e.Schema < 1 || e.Schema > SchemaVersion {
		return &FieldError{Field: "schema", Err: ErrUnknownVersion, Msg: "unsupported version"}
	}
	if e.ID == "" {
		return missing("id")
	}
	if len(e.ID) > 128 {
		return invalid("id", "longer than 128 bytes")
	}
	if err := validateID(e.ID); err != nil {
		return err
	}
	if err := ValidateType(e.Type); err != nil {
		return err
	}
	if e.Time.IsZero() {
		return missing("time")
	}
	if err := ValidateToken("study", e.Study); err != nil {
		return err
	}
	if err := ValidateToken("run", e.Run); err != nil {
		return err
	}
	if err := checkCount("attempt", e.Attempt, 1); err != nil {
		return err
	}
	if e.Run != StudyRun && e.Seq < 1 {
		return invalid("seq", "must be >= 1, got %d", e.Seq)
	}
	switch e.Source.Kind {
	case SourceHarness, SourceProduction:
	case "":
		return missing("source.kind")
	default:
		return invalid("source.kind", "must be harness or production, got %q", e.Source.Kind)
	}
	if e.TraceID != "" && !isHex(e.TraceID, 32) {
		return invalid("trace_id", "must be 32 lowercase hex digits")
	}
	if e.SpanID != "" && !isHex(e.SpanID, 16) {
		return invalid("span_id", "must be 16 lowercase hex digits")
	}
	if e.Payload == nil {
		return missing("payload")
	}
	if e.Payload.EventType() != e.Type {
		return invalid("payload", "payload is %s but type is %s", e.Payload.EventType(), e.Type)
	}
	if err := checkVersion(e.Schema, e.Payload); err != nil {
		return err
	}
	return e.Payload.Validate()
}

// validateID refuses an id that could not travel unchanged as a Nats-Msg-Id header value (the
// stream's de-duplication key): only printable ASCII without spaces. NATS trims a header
// value's white space, so ids differing only by a trailing space would be one message.
func validateID(id string) error {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return &FieldError{Field: "id", Err: ErrUnsafeToken,
				Msg: fmt.Sprintf("byte %#x at %d; use printable ASCII without spaces", c, i)}
		}
	}
	return nil
}

// checkVersion refuses, in an event of an earlier schema version, what a later version added.
func checkVersion(version int, p Payload) error {
	added := func(field string, in int) error {
		return &FieldError{Field: field, Err: ErrUnknownVersion,
			Msg: fmt.Sprintf("added in schema version %d; this event says version %d", in, version)}
	}
	switch p := p.(type) {
	case RunFinished:
		switch {
		case version >= 2:
		case p.Status == StatusErrored || p.Status == StatusOverflow:
			return added("payload.status", 2)
		case p.Cause != (Cause{}):
			return added("payload.cause", 2)
		}
	case RunStarted:
		switch {
		case version >= 2:
		case p.InputKey != "":
			return added("payload.input_key", 2)
		case len(p.Input) > 0:
			return added("payload.input", 2)
		}
	case ToolCalled:
		if version < 3 && p.Server != (ToolServer{}) {
			return added("payload.server", 3)
		}
	case ToolReturned:
		if version < 3 && p.Server != (ToolServer{}) {
			return added("payload.server", 3)
		}
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
