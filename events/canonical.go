package events

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/dittolab/ditto/events/internal/jcs"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of one JSON value: no
// white space, object keys sorted by their UTF-16 code units, numbers in ECMAScript's shortest
// round-trip form, strings escaping only '"', '\\' and control characters. Two values are equal
// iff their canonical bytes are equal. Duplicate object keys, numbers outside the range of an
// IEEE 754 double, invalid UTF-8 and trailing data are errors wrapping ErrNotCanonical.
//
// Every JSON value an event carries for comparison (tool arguments and outputs, a run's
// output, an accepted plan) must already be canonical; Validate refuses it otherwise.
func Canonical(raw []byte) ([]byte, error) {
	c, err := jcs.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	return c, nil
}

// CanonicalValue marshals v with encoding/json and returns its canonical form.
func CanonicalValue(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	return Canonical(raw)
}

// canonicalPlan is CanonicalValue(steps), written directly: a plan's steps hold two strings
// each, and encoding/json's reflection and a second parse by the canonicalizer cost the
// analyzer's fold more than the rest of the run's plan events together.
func canonicalPlan(steps []PlanStep) (json.RawMessage, error) {
	out := make([]byte, 0, 2+32*len(steps))
	out = append(out, '[')
	for i, s := range steps {
		if !utf8.ValidString(s.State) || !utf8.ValidString(s.Tool) {
			return CanonicalValue(steps) // encoding/json's replacement of invalid bytes
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"state":`...)
		out = jcs.AppendString(out, s.State)
		out = append(out, `,"tool":`...)
		out = jcs.AppendString(out, s.Tool)
		out = append(out, '}')
	}
	if steps == nil {
		return json.RawMessage("null"), nil
	}
	return append(out, ']'), nil
}

// CanonicalCalls returns MustCanonical(calls) (calls nil: "[]"), written directly: each call's
// arguments are canonicalized alone and the objects written with their keys in order ("args",
// "tool"), without encoding/json's reflection and a second parse of the whole list. Arguments
// that are not valid JSON panic, as MustCanonical does.
func CanonicalCalls(calls []Call) json.RawMessage {
	out := make([]byte, 0, 2+64*len(calls))
	out = append(out, '[')
	for i, c := range calls {
		if !utf8.ValidString(c.Tool) || len(c.Args) == 0 {
			return MustCanonical(calls) // encoding/json's replacement of invalid bytes; its null
		}
		// Arguments in an event are canonical already (Validate checks them): verified, they
		// are written as they are, without canonicalizing a copy.
		args := []byte(c.Args)
		if same, err := jcs.IsCanonical(args); err != nil || !same {
			if args, err = jcs.Canonicalize(c.Args); err != nil {
				return MustCanonical(calls) // its error and panic
			}
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"args":`...)
		out = append(out, args...)
		out = append(out, `,"tool":`...)
		out = jcs.AppendString(out, c.Tool)
		out = append(out, '}')
	}
	return append(out, ']')
}

// MustCanonical is CanonicalValue for values known to be representable; it panics otherwise.
// Use it only with literals and types under the caller's control.
func MustCanonical(v any) json.RawMessage {
	c, err := CanonicalValue(v)
	if err != nil {
		panic(err)
	}
	return c
}

// FormatNumber formats f as ECMAScript's Number.prototype.toString does (RFC 8785 §3.2.2.3),
// which is how Canonical writes every number. NaN and infinities have no JSON form;
// FormatNumber returns "null" for them and callers must reject them first.
func FormatNumber(f float64) string { return jcs.FormatNumber(f) }
