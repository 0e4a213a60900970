package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Fault is what Check found wrong with a JSON text that encoding/json would read anyway.
type Fault int

// Faults.
const (
	// FaultUTF8: a string (a value or a key) holds bytes that are not UTF-8. encoding/json
	// reads each as U+FFFD; a store that keeps the bytes (DuckDB's JSON, VARCHAR) refuses them.
	FaultUTF8 Fault = iota + 1
	// FaultSurrogate: a \u escape is half of a UTF-16 surrogate pair, alone. encoding/json
	// reads it as U+FFFD; DuckDB's JSON reader refuses it.
	FaultSurrogate
	// FaultDuplicateKey: an object names the same member twice (compared after unescaping).
	// encoding/json keeps the last value, DuckDB's JSON functions the first.
	FaultDuplicateKey
	// FaultDepth: values nested deeper than maxDepth.
	FaultDepth
)

// CheckError says what Check found, and where.
type CheckError struct {
	Fault  Fault
	Path   string // the JSON path of the value at fault: payload.args.city, steps[2].tool, or "" for the whole text
	Offset int    // byte offset in the text
}

func (e *CheckError) Error() string {
	where := "at byte " + strconv.Itoa(e.Offset)
	if e.Path != "" {
		where = e.Path + " " + where
	}
	switch e.Fault {
	case FaultUTF8:
		return where + ": string is not valid UTF-8"
	case FaultSurrogate:
		return where + `: \u escape is half of a UTF-16 surrogate pair`
	case FaultDuplicateKey:
		return where + ": key appears twice in one object"
	case FaultDepth:
		return where + ": nested deeper than " + strconv.Itoa(maxDepth) + " levels"
	}
	return where + ": invalid"
}

// Check reports the first string that is not valid Unicode (bytes that are not UTF-8, or a
// lone surrogate escape), the first object with a repeated key, and nesting deeper than
// maxDepth, anywhere in b. It judges nothing else: on a syntax error it stops and returns nil,
// leaving the error to the decoder, which refuses the text anyway. A nil result means that
// every string of b reads the same in Go, in DuckDB and in any other strict JSON reader, and
// that no member is shadowed by another.
func Check(b []byte) *CheckError { return CheckNested(b, 0) }

// CheckNested is Check for a value that is nested depth levels deep in the text it belongs to
// (1 for a member of the top-level object): what Check of the whole text finds in it, but for
// the path and offset its error names, which are relative to b.
func CheckNested(b []byte, depth int) *CheckError {
	c := checkers.Get().(*checker)
	c.b, c.i, c.err, c.stop = b, 0, nil, false
	c.value(depth)
	err := c.err
	// Keep the stacks' room for the next text, not its bytes.
	c.b, c.err = nil, nil
	clear(c.keys[:cap(c.keys)])
	clear(c.path[:cap(c.path)])
	c.keys, c.path = c.keys[:0], c.path[:0]
	checkers.Put(c)
	return err
}

// checkers keeps checkers with their stacks: Check runs on every event decoded and encoded,
// and growing the stacks anew each time cost eight allocations per event.
var checkers = sync.Pool{New: func() any { return new(checker) }}

// checker walks a JSON text. path holds the members and elements from the root to the value
// being read, so that an error can name where it is; it is only formatted on error.
type checker struct {
	b    []byte
	i    int
	err  *CheckError
	stop bool // a syntax error or a fault: stop walking
	path []pathElem
	keys [][]byte // the keys of the objects being read, innermost last (see object)
}

type pathElem struct {
	key   []byte // nil for an array element
	index int
}

func (c *checker) fault(f Fault, at int) {
	c.err = &CheckError{Fault: f, Path: c.pathString(), Offset: at}
	c.stop = true
}

// maxPath bounds the path an error shows (a value nested 512 deep has a long one).
const maxPath = 200

func (c *checker) pathString() string {
	var sb bytes.Buffer
	for _, p := range c.path {
		if sb.Len() > maxPath {
			sb.WriteString("…")
			break
		}
		if p.key == nil {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(p.index))
			sb.WriteByte(']')
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		// A key may itself be what is at fault: show it escaped, never as raw bytes.
		q := strconv.QuoteToASCII(string(p.key))
		sb.WriteString(q[1 : len(q)-1])
	}
	return sb.String()
}

func (c *checker) space() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *checker) value(depth int) {
	if depth > maxDepth {
		c.fault(FaultDepth, c.i)
		return
	}
	c.space()
	if c.i >= len(c.b) {
		c.stop = true
		return
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		c.object(depth)
	case ch == '[':
		c.array(depth)
	case ch == '"':
		c.str()
	default:
		// Numbers and literals hold no strings; their syntax is the decoder's to judge.
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return
			}
			c.i++
		}
	}
}

// object reads an object, checking that no key repeats. The keys of the objects being read
// share one stack (c.keys); this object's start at mark. Objects of events are small, so keys
// are compared with the earlier ones directly; a large object switches to a set.
func (c *checker) object(depth int) {
	c.i++ // '{'
	mark := len(c.keys)
	defer func() { c.keys = c.keys[:mark] }()
	var set map[string]struct{}
	// seen has a bit set for each key of this object, by keyBit: a key whose bit is not set
	// repeats none, and is compared with no earlier key.
	var seen uint64
	for n := 0; ; n++ {
		c.space()
		if c.i >= len(c.b) {
			c.stop = true
			return
		}
		if c.b[c.i] == '}' {
			c.i++
			return
		}
		if n > 0 {
			if c.b[c.i] != ',' {
				c.stop = true
				return
			}
			c.i++
			c.space()
		}
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			c.stop = true
			return
		}
		at := c.i
		key := c.str()
		if c.stop {
			return
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = unescapeKey(key)
		} else {
			key = key[1 : len(key)-1]
		}
		keys := c.keys[mark:]
		dup := false
		switch {
		case set != nil:
			_, dup = set[string(key)]
			set[string(key)] = struct{}{}
		case len(keys) >= 32:
			set = make(map[string]struct{}, 2*len(keys))
			for _, k := range keys {
				set[string(k)] = struct{}{}
			}
			_, dup = set[string(key)]
			set[string(key)] = struct{}{}
		default:
			if bit := keyBit(key); seen&bit == 0 {
				seen |= bit
			} else {
				for _, k := range keys {
					if bytes.Equal(k, key) {
						dup = true
						break
					}
				}
			}
			c.keys = append(c.keys, key)
		}
		c.path = append(c.path, pathElem{key: key})
		if dup {
			c.fault(FaultDuplicateKey, at)
			return
		}
		c.space()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			c.stop = true
			return
		}
		c.i++
		c.value(depth + 1)
		if c.stop {
			return
		}
		c.path = c.path[:len(c.path)-1]
	}
}

// keyBit returns one of 64 bits for a key, from its length and its first and last bytes: equal
// keys have the same bit, and most of an object's distinct keys have different ones.
func keyBit(key []byte) uint64 {
	h := uint(len(key))
	if len(key) > 0 {
		h += 3*uint(key[0]) + 5*uint(key[len(key)-1])
	}
	return 1 << (h & 63)
}

func (c *checker) array(depth int) {
	c.i++ // '['
	for n := 0; ; n++ {
		c.space()
		if c.i >= len(c.b) {
			c.stop = true
			return
		}
		if c.b[c.i] == ']' {
			c.i++
			return
		}
		if n > 0 {
			if c.b[c.i] != ',' {
				c.stop = true
				return
			}
			c.i++
		}
		c.path = append(c.path, pathElem{index: n})
		c.value(depth + 1)
		if c.stop {
			return
		}
		c.path = c.path[:len(c.path)-1]
	}
}

// str reads a string literal and returns it, quotes included. It faults on bytes that are not
// UTF-8 and on a surrogate escape that is not half of a pair; it stops (a syntax error) on
// anything encoding/json refuses.
func (c *checker) str() []byte {
	start := c.i
	for j := start + 1; j < len(c.b); {
		if j = skipPlain(c.b, j); j >= len(c.b) {
			break
		}
		ch := c.b[j]
		switch {
		case ch == '"':
			c.i = j + 1
			return c.b[start:c.i]
		case ch < 0x20:
			c.stop = true
			return nil
		case ch == '\\':
			if j+1 >= len(c.b) {
				c.stop = true
				return nil
			}
			if c.b[j+1] != 'u' {
				j += 2
				continue
			}
			r, ok := hex4(c.b, j+2)
			if !ok {
				c.stop = true
				return nil
			}
			switch {
			case r >= 0xD800 && r < 0xDC00: // a high surrogate: a low one must follow
				lo, ok := rune(0), false
				if j+12 <= len(c.b) && c.b[j+6] == '\\' && c.b[j+7] == 'u' {
					lo, ok = hex4(c.b, j+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					c.fault(FaultSurrogate, j)
					return nil
				}
				j += 12
			case r >= 0xDC00 && r <= 0xDFFF: // a low surrogate with no high one before it
				c.fault(FaultSurrogate, j)
				return nil
			default:
				j += 6
			}
		case ch < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(c.b[j:])
			if r == utf8.RuneError && size == 1 {
				c.fault(FaultUTF8, j)
				return nil
			}
			j += size
		}
	}
	c.stop = true
	return nil
}

// plain marks the bytes a string holds as they are: ASCII from the space on (DEL included)
// but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte of b from j on that is not plain, or len(b):
// eight bytes at a time, then byte by byte. Most of a string's bytes are plain, and a byte at a
// time was a tenth of decoding an event (BenchmarkDecodeItem).
func skipPlain(b []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		// Bit 7 of a byte of m is set if the byte is 0x80 or above (x), or, of the bytes
		// below 0x80 with no borrow from below, if it is below 0x20 (x-0x20 wraps), a quote
		// or a backslash (q or s is 0, and q-1 or s-1 wraps); the others it sets are of bytes
		// 0x80 and above. A subtraction borrows only from a byte so found, so bits above the
		// first one may be wrong, never bits below: the lowest bit set is the first byte
		// that is not plain.
		q, s := x^(ones*'"'), x^(ones*'\\')
		m := ((x - ones*0x20) | (q - ones) | (s - ones) | x) & highs
		if m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for j < len(b) && plain[b[j]] {
		j++
	}
	return j
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, ch := range b[at : at+4] {
		switch {
		case ch >= '0' && ch <= '9':
			r = r<<4 | rune(ch-'0')
		case ch >= 'a' && ch <= 'f':
			r = r<<4 | rune(ch-'a'+10)
		case ch >= 'A' && ch <= 'F':
			r = r<<4 | rune(ch-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// unescapeKey returns the value of a key literal with escapes (rare: keys are plain names).
// The literal has been checked, so encoding/json reads it.
func unescapeKey(lit []byte) []byte {
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return lit
	}
	return []byte(s)
}
