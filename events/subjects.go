package events

import (
	"fmt"
	"strings"
)

// Stream names, subject prefixes and durable consumer names: each is spelled only here, and
// subjects are built only here. (The streams and consumers themselves are defined and created
// by internal/bus.)
const (
	EventsStream  = "DITTO_EVENTS"
	JobsStream    = "DITTO_JOBS"
	EventsPrefix  = "ditto.events"
	JobsPrefix    = "ditto.jobs"
	EventsSubject = EventsPrefix + ".>" // every event
	JobsSubject   = JobsPrefix + ".>"   // every job

	// RejectedJobsStream keeps the jobs a worker could not run, outside ditto.jobs.> (which the
	// work queue's consumer would deliver again) and outside ditto.events.> (they are not
	// events).
	RejectedJobsStream  = "DITTO_REJECTED_JOBS"
	RejectedJobsPrefix  = "ditto.rejected.jobs"
	RejectedJobsSubject = RejectedJobsPrefix + ".>" // every rejected job

	// SpansStream holds what producer serve accepted from OpenTelemetry exporters, raw: one
	// message per span and per GenAI log record, on ditto.spans.<study>.<trace>.<record>, so
	// that a trace is assembled into its run from the stream (by any serve replica) and an
	// answered export is never only in a process's memory. Record is one of the Record* kinds.
	SpansStream  = "DITTO_SPANS"
	SpansPrefix  = "ditto.spans"
	SpansSubject = SpansPrefix + ".>" // every span record

	// AssemblerConsumer is the durable consumer on DITTO_SPANS that every producer serve shares
	// for the root spans (a trace is assembled when its root arrived); AssemblerIdleConsumer the
	// one for the first-seen markers (a trace whose root never comes is assembled incomplete).
	AssemblerConsumer     = "ditto-assembler"
	AssemblerIdleConsumer = "ditto-assembler-idle"

	// WorkersConsumer is the default durable pull consumer on DITTO_JOBS that every harness
	// worker shares; AnalyzerConsumer the default durable consumer of the analyzer on
	// DITTO_EVENTS (one per DuckDB file).
	WorkersConsumer  = "ditto-workers"
	AnalyzerConsumer = "ditto-analyzer"

	maxTokenLen = 128
	// maxTypeLen bounds an event type (one to several tokens): with the study and run tokens
	// it keeps every event subject far below a NATS server's control-line limit (4 KiB), past
	// which the server closes the connection.
	maxTypeLen = 128
)

// The records of a trace on DITTO_SPANS, the last token of their subject.
const (
	RecordSpan = "span" // a span that is not the trace's local root
	RecordRoot = "root" // the local root span: its arrival starts the assembly
	RecordLog  = "log"  // a GenAI event sent as an OpenTelemetry log record
	RecordSeen = "seen" // the trace was first seen: starts the idle timeout
	RecordDone = "done" // the trace was assembled, up to the stream sequence it names
)

// ValidateToken checks that s can be one token of a NATS subject: 1 to 128 bytes of
// letters, digits, '_' and '-'. field names the field for the error.
func ValidateToken(field, s string) error {
	if s == "" {
		return &FieldError{Field: field, Err: ErrUnsafeToken, Msg: "empty"}
	}
	if len(s) > maxTokenLen {
		return &FieldError{Field: field, Err: ErrUnsafeToken, Msg: fmt.Sprintf("longer than %d bytes", maxTokenLen)}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return &FieldError{Field: field, Err: ErrUnsafeToken,
				Msg: fmt.Sprintf("%q has %q at byte %d; use letters, digits, '_' and '-'", clip(s, 64), c, i)}
		}
	}
	return nil
}

// ValidateType checks that an event type can end a NATS subject: 1 to 128 bytes of tokens of
// letters, digits, '_' and '-', separated by single dots ("run.started", "agent.mood").
func ValidateType(t Type) error {
	s := string(t)
	if s == "" {
		return missing("type")
	}
	if len(s) > maxTypeLen {
		return &FieldError{Field: "type", Err: ErrUnsafeToken, Msg: fmt.Sprintf("longer than %d bytes", maxTypeLen)}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && i > 0 && i < len(s)-1 && s[i-1] != '.' {
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return &FieldError{Field: "type", Err: ErrUnsafeToken,
				Msg: fmt.Sprintf("%q has %q at byte %d; use tokens of letters, digits, '_' and '-' separated by single dots", clip(s, 64), c, i)}
		}
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Subject returns ditto.events.<study>.<run>.<type> for an event; with type ">" it returns
// the filter of every event of the run.
func Subject(study, run string, t Type) (string, error) {
	if err := ValidateToken("study", study); err != nil {
		return "", err
	}
	if err := ValidateToken("run", run); err != nil {
		return "", err
	}
	if t != ">" {
		if err := ValidateType(t); err != nil {
			return "", err
		}
	}
	// Types contain a dot ("run.started"); subjects keep it as two tokens, which lets a
	// consumer filter on ditto.events.*.*.run.> for every run lifecycle event.
	return EventsPrefix + "." + study + "." + run + "." + string(t), nil
}

// SubjectOf returns the subject of an envelope.
func SubjectOf(e *Envelope) (string, error) { return Subject(e.Study, e.Run, e.Type) }

// StudyEventsSubject returns the filter subject of every event of one study.
func StudyEventsSubject(study string) (string, error) {
	if err := ValidateToken("study", study); err != nil {
		return "", err
	}
	return EventsPrefix + "." + study + ".>", nil
}

// JobSubject returns ditto.jobs.<study>.
func JobSubject(study string) (string, error) {
	if err := ValidateToken("study", study); err != nil {
		return "", err
	}
	return JobsPrefix + "." + study, nil
}

// RejectedJobSubject returns ditto.rejected.jobs.<study>, or ditto.rejected.jobs._unknown when
// study is not a subject-safe token (a malformed job may name no usable study).
func RejectedJobSubject(study string) string {
	if ValidateToken("study", study) != nil {
		return RejectedJobsPrefix + "._unknown"
	}
	return RejectedJobsPrefix + "." + study
}

// SpanSubject returns ditto.spans.<study>.<trace>.<record>. trace is a lowercase hex trace id.
func SpanSubject(study, trace, record string) (string, error) {
	if err := ValidateToken("study", study); err != nil {
		return "", err
	}
	if err := ValidateToken("trace", trace); err != nil {
		return "", err
	}
	switch record {
	case RecordSpan, RecordRoot, RecordLog, RecordSeen, RecordDone:
	default:
		return "", fmt.Errorf("events: span record %q is not span, root, log, seen or done", record)
	}
	return SpansPrefix + "." + study + "." + trace + "." + record, nil
}

// TraceRecordsFilter returns the filter subject of every record of one trace.
func TraceRecordsFilter(study, trace string) (string, error) {
	if err := ValidateToken("study", study); err != nil {
		return "", err
	}
	if err := ValidateToken("trace", trace); err != nil {
		return "", err
	}
	return SpansPrefix + "." + study + "." + trace + ".*", nil
}

// SpanRecordsSubject returns the filter subject of every record of one kind, all studies and
// traces (the assembler's consumers).
func SpanRecordsSubject(record string) string { return SpansPrefix + ".*.*." + record }

// ParseSpanSubject splits a DITTO_SPANS subject into study, trace and record.
func ParseSpanSubject(subject string) (study, trace, record string, err error) {
	rest, ok := strings.CutPrefix(subject, SpansPrefix+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("events: subject %q is not %s.<study>.<trace>.<record>", subject, SpansPrefix)
	}
	return parts[0], parts[1], parts[2], nil
}

// ParseSubject splits an event subject into study, run and type.
func ParseSubject(subject string) (study, run string, t Type, err error) {
	rest, ok := strings.CutPrefix(subject, EventsPrefix+".")
	if !ok {
		return "", "", "", fmt.Errorf("events: subject %q is not under %s", subject, EventsPrefix)
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || parts[2] == "" {
		return "", "", "", fmt.Errorf("events: subject %q is not %s.<study>.<run>.<type>", subject, EventsPrefix)
	}
	return parts[0], parts[1], Type(parts[2]), nil
}
