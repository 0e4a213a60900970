package jsonscan

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds the nesting the scanner follows; deeper values make it fail, and
// encoding/json, which has its own limit and error, decides.
const maxDepth = 512

// Scanner reads JSON without reflection. It accepts only input that it reads exactly as
// encoding/json would: a syntax error, an escaped, unknown or repeated key, or a number that
// does not fit its field makes it fail, and the caller then reads the same bytes with
// encoding/json, which gives the result or the error it always gave. Failing is sticky: once
// failed, every read returns a zero value at once, so that callers check Failed only at the
// end.
type Scanner struct {
	b      []byte
	i      int
	failed bool
	strs   *Strings // shares the strings Str and SharedStr return (nil: none)
	// unclean: a string read had escapes or bytes that are not UTF-8, or a raw value read was
	// not clean (see SkipClean); what was read may hold something Check refuses.
	unclean bool
}

// New returns a scanner reading b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Share makes the strings that Str and SharedStr return come from strs where it holds them.
func (s *Scanner) Share(strs *Strings) { s.strs = strs }

// Failed reports whether the scanner has failed.
func (s *Scanner) Failed() bool { return s.failed }

// Fail makes the scanner fail: the input is not one it reads exactly as encoding/json would.
func (s *Scanner) Fail() {
	s.failed = true
	s.i = len(s.b)
}

func (s *Scanner) skipSpace() {
	for s.i < len(s.b) {
		// Above the space, the usual case (compact JSON), in one comparison.
		if c := s.b[s.i]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		s.i++
	}
}

// Peek returns the next byte after white space, or 0 at the end of the input.
func (s *Scanner) Peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// End fails unless only white space is left.
func (s *Scanner) End() {
	if s.Peek() != 0 || s.i != len(s.b) {
		s.Fail()
	}
}

func (s *Scanner) Expect(c byte) {
	if s.Peek() != c {
		s.Fail()
		return
	}
	s.i++
}

// BeginObject consumes the '{' of an object; read its members with NextKey.
func (s *Scanner) BeginObject() { s.Expect('{') }

// NextKey returns the key of the next member and consumes the ':' after it, or returns nil
// once it has consumed the closing '}' (or failed). n counts the members read so far and must
// start at 0 for each object. Keys with escapes or non-ASCII bytes fail: encoding/json matches
// struct fields case-insensitively, with Unicode folding, and only exact names are safe here.
func (s *Scanner) NextKey(n *int) []byte {
	c := s.Peek()
	if c == '}' {
		s.i++
		return nil
	}
	if *n > 0 {
		if c != ',' {
			s.Fail()
			return nil
		}
		s.i++
		c = s.Peek()
	}
	if c != '"' {
		s.Fail()
		return nil
	}
	start := s.i + 1
	j := start
	for j < len(s.b) && s.b[j] != '"' {
		if c := s.b[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			s.Fail()
			return nil
		}
		j++
	}
	if j >= len(s.b) {
		s.Fail()
		return nil
	}
	key := s.b[start:j]
	s.i = j + 1
	s.Expect(':')
	if s.failed {
		return nil
	}
	*n++
	return key
}

// Once fails if the field numbered bit (0..63) was already read: encoding/json lets the last
// of repeated keys win, merging objects, which the scanner does not copy.
func (s *Scanner) Once(seen *uint64, bit uint) {
	if *seen&(1<<bit) != 0 {
		s.Fail()
	}
	*seen |= 1 << bit
}

// BeginArray consumes the '[' of an array; read its elements while NextElem reports true.
func (s *Scanner) BeginArray() { s.Expect('[') }

// NextElem reports whether another element follows (consuming the ',' before it), or
// consumes the closing ']' and reports false. n counts the elements so far.
func (s *Scanner) NextElem(n *int) bool {
	c := s.Peek()
	if c == ']' {
		s.i++
		return false
	}
	if *n > 0 {
		if c != ',' {
			s.Fail()
			return false
		}
		s.i++
	}
	*n++
	return !s.failed
}

// StrLit reads a string literal, quotes included, checking its syntax as encoding/json does.
// clean reports that it has no escapes and is valid UTF-8, so that the bytes between the
// quotes are its value.
func (s *Scanner) StrLit() (lit []byte, clean bool) {
	if s.Peek() != '"' {
		s.Fail()
		return nil, false
	}
	start := s.i
	clean = true
	ascii := true
	for j := start + 1; j < len(s.b); {
		// Most bytes of a string are plain ASCII (see plain): skip them eight at a time.
		if j = skipPlain(s.b, j); j >= len(s.b) {
			break
		}
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			lit = s.b[start:s.i]
			if !ascii && clean && !utf8.Valid(lit) {
				clean = false
			}
			return lit, clean
		case c < 0x20:
			s.Fail()
			return nil, false
		case c == '\\':
			clean = false
			if j+1 >= len(s.b) {
				s.Fail()
				return nil, false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s.b) || !isHexBytes(s.b[j+2:j+6]) {
					s.Fail()
					return nil, false
				}
				j += 6
			default:
				s.Fail()
				return nil, false
			}
		default:
			// Above ASCII (c is no other byte here): skip the run of such bytes here, not
			// through skipPlain a byte at a time.
			ascii = false
			j++
			for j < len(s.b) && s.b[j] >= utf8.RuneSelf {
				j++
			}
		}
	}
	s.Fail()
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

// Str reads a string value. Escapes and invalid UTF-8 (rare on the wire) are left to
// encoding/json, whose unquoting rules (surrogates, replacement characters) are the contract.
func (s *Scanner) Str() string {
	lit, clean := s.StrLit()
	if s.failed {
		return ""
	}
	if clean {
		return s.strs.get(lit[1 : len(lit)-1])
	}
	s.unclean = true
	var v string
	if err := json.Unmarshal(lit, &v); err != nil {
		s.Fail()
	}
	return v
}

// PlainStr is Str for a string without escapes, of valid UTF-8: it fails on any other, which
// Str would unescape. A text read only with PlainStr, NextKey and Once holds no string or key
// that Check refuses.
func (s *Scanner) PlainStr() string {
	lit, clean := s.StrLit()
	if !clean {
		s.Fail()
		return ""
	}
	return string(lit[1 : len(lit)-1])
}

// SharedStr is PlainStr for a value that repeats from one text to the next: its string comes
// from the scanner's Strings (see Share).
func (s *Scanner) SharedStr() string {
	lit, clean := s.StrLit()
	if !clean {
		s.Fail()
		return ""
	}
	return s.strs.get(lit[1 : len(lit)-1])
}

// PlainStrOf is PlainStr that returns the value held in known for a string known holds as a
// key, without allocating a copy: for strings drawn from a small set (an event's type).
func (s *Scanner) PlainStrOf(known map[string]string) string {
	lit, clean := s.StrLit()
	if !clean {
		s.Fail()
		return ""
	}
	if v, ok := known[string(lit[1:len(lit)-1])]; ok {
		return v
	}
	return string(lit[1 : len(lit)-1])
}

// Strs reads an array of strings. An empty array is an empty, non-nil slice, as encoding/json
// makes it.
func (s *Scanner) Strs() []string {
	out := []string{}
	s.BeginArray()
	for n := 0; s.NextElem(&n); {
		out = append(out, s.Str())
	}
	return out
}

// number reads a number literal, checking its syntax.
func (s *Scanner) number() []byte {
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
		s.Fail()
		return nil
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			s.Fail()
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
			s.Fail()
			return nil
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	s.i = j
	return b[start:j]
}

// Int64 reads an integer. Fractions, exponents and numbers of more than 18 digits fail (as
// encoding/json rejects the first two and may reject the last).
func (s *Scanner) Int64() int64 {
	lit := s.number()
	if s.failed {
		return 0
	}
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 18 {
		s.Fail()
		return 0
	}
	var v int64
	for _, c := range lit {
		if c < '0' || c > '9' {
			s.Fail()
			return 0
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v
}

func (s *Scanner) Int() int {
	v := s.Int64()
	if int64(int(v)) != v {
		s.Fail()
	}
	return int(v)
}

func (s *Scanner) Float64() float64 {
	lit := s.number()
	if s.failed {
		return 0
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		s.Fail()
	}
	return f
}

func (s *Scanner) Bool() bool {
	switch s.Peek() {
	case 't':
		s.Literal("true")
		return true
	case 'f':
		s.Literal("false")
		return false
	}
	s.Fail()
	return false
}

func (s *Scanner) Literal(lit string) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		s.Fail()
		return
	}
	s.i += len(lit)
}

// Next consumes lit if the input goes on with it, byte for byte (no white space before it),
// and reports whether it did; else it leaves the scanner as it was.
func (s *Scanner) Next(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// Rest consumes and returns the rest of the input (nil once failed).
func (s *Scanner) Rest() []byte {
	if s.failed {
		return nil
	}
	r := s.b[s.i:]
	s.i = len(s.b)
	return r
}

// Skip reads one value of any kind, checking its syntax, and returns its bytes (which alias
// the input).
func (s *Scanner) Skip(depth int) []byte {
	if depth > maxDepth {
		s.Fail()
		return nil
	}
	c := s.Peek()
	start := s.i
	switch {
	case c == '{':
		s.i++
		for n := 0; ; n++ {
			c := s.Peek()
			if c == '}' {
				s.i++
				break
			}
			if n > 0 {
				if c != ',' {
					s.Fail()
					return nil
				}
				s.i++
			}
			s.StrLit()
			s.Expect(':')
			s.Skip(depth + 1)
			if s.failed {
				return nil
			}
		}
	case c == '[':
		s.BeginArray()
		for n := 0; s.NextElem(&n); {
			s.Skip(depth + 1)
		}
	case c == '"':
		s.StrLit()
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	case c == 't':
		s.Literal("true")
	case c == 'f':
		s.Literal("false")
	case c == 'n':
		s.Literal("null")
	default:
		s.Fail()
	}
	if s.failed {
		return nil
	}
	return s.b[start:s.i]
}

// SkipBounds returns the bytes of the object or array that starts at the next byte, found by
// matching its brackets outside strings, without reading what is inside (a value of another
// kind is read by Skip). The bytes are the value's when the value is valid JSON, and then
// only then: a caller must read them with a scanner before trusting them, and has read them
// exactly as Skip would have once that reading succeeds (a valid value ends where its
// brackets first balance). It fails on brackets that do not balance.
func (s *Scanner) SkipBounds() []byte {
	c := s.Peek()
	if c != '{' && c != '[' {
		return s.Skip(0)
	}
	b, start, depth := s.b, s.i, 0
	for j := start; j < len(b); j++ {
		switch b[j] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i = j + 1
				return b[start:s.i]
			}
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		}
	}
	s.Fail()
	return nil
}

// SkipClean is Skip that also reports whether the value is clean: every string and key in it
// is plain (no escapes, valid UTF-8), no object in it repeats a key, objects have at most
// cleanKeys members and values nest at most cleanDepth levels. A clean value holds nothing
// Check refuses, at any depth it is nested in the text (below maxDepth-cleanDepth), so that a
// caller need not check it again; clean false says nothing (Check decides). It reads the
// value, and fails, exactly as Skip does.
func (s *Scanner) SkipClean() (v []byte, clean bool) {
	s.skipSpace()
	start := s.i
	clean = s.skipClean(0)
	if s.failed {
		return nil, false
	}
	return s.b[start:s.i], clean
}

// cleanDepth and cleanKeys bound what SkipClean vouches for: deeper values and larger objects
// (rare in events) are read by Skip's rules and left to Check.
const (
	cleanDepth = 32
	cleanKeys  = 16
)

func (s *Scanner) skipClean(depth int) bool {
	if depth > cleanDepth {
		s.Skip(depth)
		return false
	}
	switch c := s.Peek(); {
	case c == '{':
		s.i++
		var keys [cleanKeys][]byte
		clean := true
		for n := 0; ; n++ {
			c := s.Peek()
			if c == '}' {
				s.i++
				return clean
			}
			if n > 0 {
				if c != ',' {
					s.Fail()
					return false
				}
				s.i++
			}
			lit, plainKey := s.StrLit()
			if s.failed {
				return false
			}
			if clean {
				// A plain key's bytes are its value: equal bytes are the same key.
				key := lit[1 : len(lit)-1]
				switch {
				case !plainKey || n >= cleanKeys:
					clean = false
				default:
					for _, k := range keys[:n] {
						if string(k) == string(key) {
							clean = false
							break
						}
					}
					keys[n] = key
				}
			}
			s.Expect(':')
			if !s.skipClean(depth + 1) {
				clean = false
			}
			if s.failed {
				return false
			}
		}
	case c == '[':
		s.i++
		clean := true
		for n := 0; s.NextElem(&n); {
			if !s.skipClean(depth + 1) {
				clean = false
			}
		}
		return clean && !s.failed
	case c == '"':
		_, clean := s.StrLit()
		return clean
	}
	s.Skip(depth)
	return !s.failed
}

// Raw reads one value as a fresh copy of its bytes, as json.RawMessage holds it.
func (s *Scanner) Raw() json.RawMessage {
	v, clean := s.SkipClean()
	if s.failed {
		return nil
	}
	if !clean {
		s.unclean = true
	}
	return append(json.RawMessage(nil), v...)
}
