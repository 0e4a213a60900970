package jcs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize returns the canonical form of one JSON value: no white space, object keys
// sorted by their UTF-16 code units, numbers in ECMAScript's shortest round-trip form (see
// FormatNumber), strings escaping only '"', '\\' and control characters. Invalid UTF-8,
// duplicate object keys, numbers outside the range of an IEEE 754 double and trailing data are
// errors.
func Canonicalize(raw []byte) ([]byte, error) {
	c := canonicalizer{in: raw, out: make([]byte, 0, len(raw))}
	if err := c.run(); err != nil {
		return nil, err
	}
	return c.out, nil
}

// IsCanonical reports whether raw is in canonical form (Canonicalize(raw) returns raw), with
// Canonicalize's error when raw has none. It writes the canonical form into a buffer reused
// between calls instead of a new one: validation checks every JSON value an event carries.
func IsCanonical(raw []byte) (bool, error) {
	if isCanonicalFast(raw) {
		return true, nil
	}
	c := checkers.Get().(*canonicalizer)
	c.in, c.pos, c.out, c.members = raw, 0, c.out[:0], c.members[:0]
	err := c.run()
	same := err == nil && string(c.out) == string(raw)
	c.in = nil
	clear(c.members[:cap(c.members)]) // their keys may point into raw
	if cap(c.out) <= maxPooled && cap(c.scratch) <= maxPooled && cap(c.members) <= maxPooled/32 {
		checkers.Put(c)
	}
	return same, err
}

// checkers holds IsCanonical's canonicalizers; one whose buffers grew beyond maxPooled is
// dropped rather than kept.
var checkers = sync.Pool{New: func() any { return new(canonicalizer) }}

const maxPooled = 64 << 10

// run canonicalizes c.in into c.out.
func (c *canonicalizer) run() error {
	if !utf8.Valid(c.in) {
		return errors.New("input is not valid UTF-8")
	}
	c.skipSpace()
	if err := c.value(0); err != nil {
		return err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return fmt.Errorf("trailing data after the JSON value at byte %d", c.pos)
	}
	return nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 512

// canonicalizer is a single-pass JSON parser that writes RFC 8785 output as it reads. It
// allocates only the output and, per object, the member spans it sorts; it is the hot path of
// every Encode and Decode, hence not built on encoding/json's tokenizer.
type canonicalizer struct {
	in      []byte
	pos     int
	out     []byte
	scratch []byte
	members []member // the members of the objects being read (see object)
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("byte %d: "+format, append([]any{c.pos}, args...)...)
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	if depth > maxDepth {
		return c.errorf("nested deeper than %d", maxDepth)
	}
	if c.pos >= len(c.in) {
		return c.errorf("unexpected end of input")
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(depth)
	case ch == '[':
		return c.array(depth)
	case ch == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.out = AppendString(c.out, s)
		return nil
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	default:
		return c.errorf("unexpected %q", ch)
	}
}

func (c *canonicalizer) literal(lit string) error {
	if len(c.in)-c.pos < len(lit) || string(c.in[c.pos:c.pos+len(lit)]) != lit {
		return c.errorf("invalid literal")
	}
	c.pos += len(lit)
	c.out = append(c.out, lit...)
	return nil
}

type member struct {
	key        []byte
	start, end int // the member's `"key":value` bytes in out
}

func (c *canonicalizer) object(depth int) error {
	c.pos++ // '{'
	c.out = append(c.out, '{')
	base := len(c.out)
	// The members go on c.members, a stack shared by the nested objects: each truncates it
	// back to mbase when it is done, so one backing array serves every object of the input.
	mbase := len(c.members)
	defer func() { c.members = c.members[:mbase] }()
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return c.errorf("object key is not a string")
		}
		key, err := c.str()
		if err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return c.errorf("missing ':' after object key")
		}
		c.pos++
		c.skipSpace()
		start := len(c.out)
		c.out = AppendString(c.out, key)
		c.out = append(c.out, ':')
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.members = append(c.members, member{key: key, start: start, end: len(c.out)})
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.errorf("unexpected end of object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return c.errorf("expected ',' or '}' in object")
		}
		c.pos++
		break
	}
	members := c.members[mbase:]
	sorted := slices.IsSortedFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
	if !sorted {
		slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
	}
	for i := 1; i < len(members); i++ {
		if string(members[i].key) == string(members[i-1].key) {
			return fmt.Errorf("duplicate object key %q", members[i].key)
		}
	}
	if !sorted {
		c.scratch = c.scratch[:0]
		for i, m := range members {
			if i > 0 {
				c.scratch = append(c.scratch, ',')
			}
			c.scratch = append(c.scratch, c.out[m.start:m.end]...)
		}
		c.out = append(c.out[:base], c.scratch...)
	} else {
		// Members were written back to back; put the commas between them.
		c.scratch = append(c.scratch[:0], c.out[base:]...)
		c.out = c.out[:base]
		for i, m := range members {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[m.start-base:m.end-base]...)
		}
	}
	c.out = append(c.out, '}')
	return nil
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // '['
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for first := true; ; first = false {
		if !first {
			c.out = append(c.out, ',')
		}
		c.skipSpace()
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return c.errorf("unexpected end of array")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != ']' {
			return c.errorf("expected ',' or ']' in array")
		}
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
}

// str reads a JSON string at c.pos and returns its decoded value; without escapes it is a
// sub-slice of the input, which is never modified.
func (c *canonicalizer) str() ([]byte, error) {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: no escapes.
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		if ch == '"' {
			s := c.in[start:c.pos:c.pos]
			c.pos++
			return s, nil
		}
		if ch == '\\' {
			break
		}
		if ch < 0x20 {
			return nil, c.errorf("control character in string")
		}
		c.pos++
	}
	buf := append([]byte(nil), c.in[start:c.pos]...)
	for c.pos < len(c.in) {
		ch := c.in[c.pos]
		switch {
		case ch == '"':
			c.pos++
			return buf, nil
		case ch < 0x20:
			return nil, c.errorf("control character in string")
		case ch != '\\':
			buf = append(buf, ch)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.in) {
			return nil, c.errorf("unterminated escape")
		}
		esc := c.in[c.pos+1]
		c.pos += 2
		switch esc {
		case '"', '\\', '/':
			buf = append(buf, esc)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := c.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				if c.pos+1 < len(c.in) && c.in[c.pos] == '\\' && c.in[c.pos+1] == 'u' {
					c.pos += 2
					r2, err := c.hex4()
					if err != nil {
						return nil, err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						return nil, c.errorf("invalid UTF-16 surrogate pair")
					}
				} else {
					return nil, c.errorf("lone UTF-16 surrogate")
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, c.errorf("invalid escape \\%c", esc)
		}
	}
	return nil, c.errorf("unterminated string")
}

func (c *canonicalizer) hex4() (rune, error) {
	if len(c.in)-c.pos < 4 {
		return 0, c.errorf("short \\u escape")
	}
	var r rune
	for _, h := range c.in[c.pos : c.pos+4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			r |= rune(h - 'A' + 10)
		default:
			return 0, c.errorf("invalid \\u escape")
		}
	}
	c.pos += 4
	return r, nil
}

var errNumber = errors.New("invalid number")

// number checks the JSON number grammar and writes the number's ECMAScript form.
func (c *canonicalizer) number() error {
	start := c.pos
	i := c.pos
	if i < len(c.in) && c.in[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(c.in) && c.in[i] == '0':
		i++
	case i < len(c.in) && c.in[i] >= '1' && c.in[i] <= '9':
		for i < len(c.in) && c.in[i] >= '0' && c.in[i] <= '9' {
			i++
		}
	default:
		return c.errorf("%v", errNumber)
	}
	intDigits := i - intStart
	plainInt := true
	if i < len(c.in) && c.in[i] == '.' {
		plainInt = false
		i++
		d := i
		for i < len(c.in) && c.in[i] >= '0' && c.in[i] <= '9' {
			i++
		}
		if i == d {
			return c.errorf("%v", errNumber)
		}
	}
	if i < len(c.in) && (c.in[i] == 'e' || c.in[i] == 'E') {
		plainInt = false
		i++
		if i < len(c.in) && (c.in[i] == '+' || c.in[i] == '-') {
			i++
		}
		d := i
		for i < len(c.in) && c.in[i] >= '0' && c.in[i] <= '9' {
			i++
		}
		if i == d {
			return c.errorf("%v", errNumber)
		}
	}
	c.pos = i
	lit := c.in[start:i]
	// Integers below 10^15 are exact doubles that ECMAScript prints digit for digit.
	if plainInt && intDigits <= 15 {
		if string(lit) == "-0" {
			c.out = append(c.out, '0')
		} else {
			c.out = append(c.out, lit...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("number %s is outside the range of an IEEE 754 double", lit)
	}
	c.out = append(c.out, FormatNumber(f)...)
	return nil
}
