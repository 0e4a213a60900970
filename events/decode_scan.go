package events

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// maxScanDepth bounds the nesting the scanner follows; deeper values go to encoding/json,
// which has its own limit and error.
const maxScanDepth = 512

// scanner reads JSON without reflection for Decode's fast path. It accepts only input that it
// decodes exactly as encoding/json would: a syntax error, an escaped, unknown or repeated key,
// a null where encoding/json would leave a field untouched, or a number that does not fit its
// field makes it fail, and the caller then decodes the same bytes with encoding/json, which
// gives the result or the error it always gave. Failing is sticky: once failed, every read
// returns a zero value at once, so that callers check failed only at the end.
type scanner struct {
	b      []byte
	i      int
	failed bool
}

func (s *scanner) fail() {
	s.failed = true
	s.i = len(s.b)
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end of the input.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end fails unless only white space is left.
func (s *scanner) end() {
	if s.peek() != 0 || s.i != len(s.b) {
		s.fail()
	}
}

func (s *scanner) expect(c byte) {
	if s.peek() != c {
		s.fail()
		return
	}
	s.i++
}

// beginObject consumes the '{' of an object; read its members with nextKey.
func (s *scanner) beginObject() { s.expect('{') }

// nextKey returns the key of the next member and consumes the ':' after it, or returns nil
// once it has consumed the closing '}' (or failed). n counts the members read so far and must
// start at 0 for each object. Keys with escapes or non-ASCII bytes fail: encoding/json matches
// struct fields case-insensitively, with Unicode folding, and only exact names are safe here.
func (s *scanner) nextKey(n *int) []byte {
	c := s.peek()
	if c == '}' {
		s.i++
		return nil
	}
	if *n > 0 {
		if c != ',' {
			s.fail()
			return nil
		}
		s.i++
		c = s.peek()
	}
	if c != '"' {
		s.fail()
		return nil
	}
	start := s.i + 1
	j := start
	for j < len(s.b) && s.b[j] != '"' {
		if c := s.b[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			s.fail()
			return nil
		}
		j++
	}
	if j >= len(s.b) {
		s.fail()
		return nil
	}
	key := s.b[start:j]
	s.i = j + 1
	s.expect(':')
	if s.failed {
		return nil
	}
	*n++
	return key
}

// once fails if the field numbered bit was already read: encoding/json lets the last of
// repeated keys win, merging objects, which the fast path does not copy.
func (s *scanner) once(seen *uint32, bit uint) {
	if *seen&(1<<bit) != 0 {
		s.fail()
	}
	*seen |= 1 << bit
}

// beginArray consumes the '[' of an array; read its elements while nextElem reports true.
func (s *scanner) beginArray() { s.expect('[') }

// nextElem reports whether another element follows (consuming the ',' before it), or
// consumes the closing ']' and reports false. n counts the elements so far.
func (s *scanner) nextElem(n *int) bool {
	c := s.peek()
	if c == ']' {
		s.i++
		return false
	}
	if *n > 0 {
		if c != ',' {
			s.fail()
			return false
		}
		s.i++
	}
	*n++
	return !s.failed
}

// strLit reads a string literal, quotes included, checking its syntax as encoding/json does.
// clean reports that it has no escapes and is valid UTF-8, so that the bytes between the
// quotes are its value.
func (s *scanner) strLit() (lit []byte, clean bool) {
	if s.peek() != '"' {
		s.fail()
		return nil, false
	}
	start := s.i
	clean = true
	ascii := true
	for j := start + 1; j < len(s.b); {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			lit = s.b[start:s.i]
			if !ascii && clean && !utf8.Valid(lit) {
				clean = false
			}
			return lit, clean
		case c < 0x20:
			s.fail()
			return nil, false
		case c == '\\':
			clean = false
			if j+1 >= len(s.b) {
				s.fail()
				return nil, false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s.b) || !isHexBytes(s.b[j+2:j+6]) {
					s.fail()
					return nil, false
				}
				j += 6
			default:
				s.fail()
				return nil, false
			}
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			j++
		}
	}
	s.fail()
	return nil, false
}

func isHexBytes(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads a string value. Escapes and invalid UTF-8 (rare on the wire) are left to
// encoding/json, whose unquoting rules (surrogates, replacement characters) are the contract.
func (s *scanner) str() string {
	lit, clean := s.strLit()
	if s.failed {
		return ""
	}
	if clean {
		return string(lit[1 : len(lit)-1])
	}
	var v string
	if err := json.Unmarshal(lit, &v); err != nil {
		s.fail()
	}
	return v
}

// strs reads an array of strings. An empty array is an empty, non-nil slice, as encoding/json
// makes it.
func (s *scanner) strs() []string {
	out := []string{}
	s.beginArray()
	for n := 0; s.nextElem(&n); {
		out = append(out, s.str())
	}
	return out
}

// number reads a number literal, checking its syntax.
func (s *scanner) number() []byte {
	s.skipSpace()
	b, start, j := s.b, s.i, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		s.fail()
		return nil
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			s.fail()
			return nil
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			s.fail()
			return nil
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	s.i = j
	return b[start:j]
}

// int64 reads an integer. Fractions, exponents and numbers of more than 18 digits fail (as
// encoding/json rejects the first two and may reject the last).
func (s *scanner) int64() int64 {
	lit := s.number()
	if s.failed {
		return 0
	}
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 18 {
		s.fail()
		return 0
	}
	var v int64
	for _, c := range lit {
		if c < '0' || c > '9' {
			s.fail()
			return 0
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v
}

func (s *scanner) int() int {
	v := s.int64()
	if int64(int(v)) != v {
		s.fail()
	}
	return int(v)
}

func (s *scanner) float64() float64 {
	lit := s.number()
	if s.failed {
		return 0
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		s.fail()
	}
	return f
}

func (s *scanner) bool() bool {
	switch s.peek() {
	case 't':
		s.literal("true")
		return true
	case 'f':
		s.literal("false")
		return false
	}
	s.fail()
	return false
}

func (s *scanner) literal(lit string) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.fail()
		return
	}
	s.i += len(lit)
}

// skip reads one value of any kind, checking its syntax, and returns its bytes (which alias
// the input).
func (s *scanner) skip(depth int) []byte {
	if depth > maxScanDepth {
		s.fail()
		return nil
	}
	c := s.peek()
	start := s.i
	switch {
	case c == '{':
		s.i++
		for n := 0; ; n++ {
			c := s.peek()
			if c == '}' {
				s.i++
				break
			}
			if n > 0 {
				if c != ',' {
					s.fail()
					return nil
				}
				s.i++
			}
			s.strLit()
			s.expect(':')
			s.skip(depth + 1)
			if s.failed {
				return nil
			}
		}
	case c == '[':
		s.beginArray()
		for n := 0; s.nextElem(&n); {
			s.skip(depth + 1)
		}
	case c == '"':
		s.strLit()
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.fail()
	}
	if s.failed {
		return nil
	}
	return s.b[start:s.i]
}

// raw reads one value as a fresh copy of its bytes, as json.RawMessage holds it.
func (s *scanner) raw() json.RawMessage {
	v := s.skip(0)
	if s.failed {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}
