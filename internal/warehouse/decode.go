package warehouse

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
)

// item is one delivered message, decoded.
type item struct {
	streamSeq uint64
	subject   string // "" once a good event is decoded: subjectOf gives it
	msgID     string // the Nats-Msg-Id header (a good event's id string when the two are equal)
	// reply is the delivery's reply subject, by which the committer acknowledges or
	// terminates the message ("" in replays without a broker).
	reply string
	raw   []byte

	env     events.Envelope // valid when rej == nil
	payload []byte          // the payload as JSON
	rej     *rejection
	dup     bool // a good event whose id an earlier message of the same batch has (set by commit)
}

// rejection says why a message is kept in rejected_events instead of events.
type rejection struct {
	class  string
	reason string
}

// Error classes of rejected_events.error_class.
const (
	classMalformed       = "malformed"
	classInvalid         = "invalid"
	classUnknownType     = "unknown_type"
	classUnknownVersion  = "unknown_version"
	classTooLarge        = "too_large"
	classSubjectMismatch = "subject_mismatch"
	// classUnstorable: the event decoded and is valid, and DuckDB refused to store it.
	classUnstorable = "unstorable"
)

// printable returns s if it is UTF-8 without NUL bytes (what a VARCHAR column takes), else s
// with every other byte written as \xNN.
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0 || r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// decodeItem decodes it.raw into it.env and it.payload, or sets it.rej. The payload column
// keeps the producer's bytes, as Decode found them in the message.
func decodeItem(it *item) {
	e, payload, err := events.DecodeWithPayload(it.raw)
	if err != nil {
		it.rej = &rejection{class: errorClass(err), reason: err.Error()}
		return
	}
	if !onSubject(it.subject, &e) {
		want, _ := events.SubjectOf(&e)
		it.rej = &rejection{class: classSubjectMismatch,
			reason: fmt.Sprintf("warehouse: event %s of %s/%s is on subject %q, want %q", e.Type, e.Study, e.Run, it.subject, want)}
		return
	}
	it.env, it.payload = e, payload
	// The client's strings of a good event's message go with the message: its subject is the
	// event's own (onSubject; subjectOf gives it back) and its Nats-Msg-Id, as ditto's
	// producers write it for every event but study.defined, the event's id. Kept, each held a
	// string the client allocated per message (the id a piece of the whole header block) for as
	// long as the item lived: 2.3 of the 28 MB the analyzer held live at BenchmarkIngest's peak
	// (docs/benchmarks.md, twenty-ninth session).
	it.subject = ""
	if it.msgID == e.ID {
		it.msgID = e.ID
	}
}

// subjectOf is the subject it was delivered on: a good event's, dropped when it decoded
// (decodeItem), is its own.
func (it *item) subjectOf() string {
	if it.subject == "" && it.rej == nil && it.env.Type != "" {
		s, _ := events.SubjectOf(&it.env)
		return s
	}
	return it.subject
}

// onSubject reports whether subject is events.SubjectOf(e) without building that string (an
// allocation per event): e is valid, so its study, run and type are valid subject tokens, and
// the subject is theirs joined by dots after the events prefix.
func onSubject(subject string, e *events.Envelope) bool {
	rest, ok := strings.CutPrefix(subject, events.EventsPrefix+".")
	for _, tok := range [...]string{e.Study, e.Run} {
		if !ok {
			return false
		}
		if rest, ok = strings.CutPrefix(rest, tok); ok {
			rest, ok = strings.CutPrefix(rest, ".")
		}
	}
	return ok && rest == string(e.Type)
}

func errorClass(err error) string {
	switch {
	case errors.Is(err, events.ErrTooLarge):
		return classTooLarge
	case errors.Is(err, events.ErrMalformed):
		return classMalformed
	case errors.Is(err, events.ErrUnknownType):
		return classUnknownType
	case errors.Is(err, events.ErrUnknownVersion):
		return classUnknownVersion
	}
	return classInvalid
}
