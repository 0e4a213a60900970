package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of one JSON value: no
// white space, object keys sorted by their UTF-16 code units, numbers in ECMAScript's shortest
// round-trip form, strings escaping only '"', '\\' and control characters. Two values are equal
// iff their canonical bytes are equal. Duplicate object keys, numbers outside the range of an
// IEEE 754 double, invalid UTF-8 and trailing data are errors.
func Canonical(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) { // encoding/json would silently replace invalid bytes with U+FFFD
		return nil, fmt.Errorf("%w: input is not valid UTF-8", ErrNotCanonical)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := canonValue(dec, &buf); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the JSON value", ErrNotCanonical)
	}
	return buf.Bytes(), nil
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

func canonValue(dec *json.Decoder, buf *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	return canonToken(dec, tok, buf)
}

func canonToken(dec *json.Decoder, tok json.Token, buf *bytes.Buffer) error {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return canonObject(dec, buf)
		case '[':
			return canonArray(dec, buf)
		}
		return fmt.Errorf("unexpected %q", v)
	case string:
		return writeString(buf, v)
	case json.Number:
		return writeNumber(buf, string(v))
	case bool:
		if v {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %v", tok)
	}
	return nil
}

func canonObject(dec *json.Decoder, buf *bytes.Buffer) error {
	type member struct {
		key   string
		utf16 []uint16
		value []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("object key is not a string")
		}
		if seen[key] {
			return fmt.Errorf("duplicate object key %q", key)
		}
		seen[key] = true
		var vb bytes.Buffer
		if err := canonValue(dec, &vb); err != nil {
			return err
		}
		members = append(members, member{key, utf16.Encode([]rune(key)), vb.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.utf16, b.utf16) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeString(buf, m.key); err != nil {
			return err
		}
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return nil
}

func canonArray(dec *json.Decoder, buf *bytes.Buffer) error {
	buf.WriteByte('[')
	first := true
	for dec.More() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := canonValue(dec, buf); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	buf.WriteByte(']')
	return nil
}

func writeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("string is not valid UTF-8")
	}
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
	return nil
}

func writeNumber(buf *bytes.Buffer, lit string) error {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("number %s is outside the range of an IEEE 754 double", lit)
	}
	buf.WriteString(FormatNumber(f))
	return nil
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
