package events

import (
	"encoding/json"
	"fmt"

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
