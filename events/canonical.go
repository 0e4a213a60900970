package events

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of one JSON value: no
// white space, object keys sorted by their UTF-16 code units, numbers in ECMAScript's shortest
// round-trip form, strings escaping only '"', '\\' and control characters. Two values are equal
// iff their canonical bytes are equal. Duplicate object keys, numbers outside the range of an
// IEEE 754 double, invalid UTF-8 and trailing data are errors.
func Canonical(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: input is not valid UTF-8", ErrNotCanonical)
	}
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	c.skipSpace()
	if err := c.value(0); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return nil, fmt.Errorf("%w: trailing data after the JSON value at byte %d", ErrNotCanonical, c.pos)
	}
	return c.out, nil
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

// FormatNumber formats f as ECMAScript's Number.prototype.toString does (RFC 8785 §3.2.2.3).
// NaN and infinities have no JSON form; FormatNumber returns "null" for them and callers must
// reject them first.
func FormatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	if f == 0 {
		return "0" // also for -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d1.d2...dk and exponent e, so f = 0.d1...dk × 10^n with n = e+1.
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(expStr)
	k, n := len(digits), e+1
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		exp := n - 1
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		m := digits[:1]
		if k > 1 {
			m += "." + digits[1:]
		}
		out = m + "e" + es + strconv.Itoa(exp)
	}
	return sign + out
}
