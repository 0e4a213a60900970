package metrics

import (
	"encoding/binary"
	"slices"
)

// Argument leaves. A leaf is (JSON path, canonical scalar): every string,
// number, true, false and null in the arguments, with the path of object
// keys and array indices leading to it. Two refinements the definition leaves
// open, fixed here:
//   - an empty object or array below the root is a leaf with the scalar
//     "{}" or "[]" (so {"a":{}} and {"a":[]} differ); an empty root object
//     or array has no leaves, so two calls without arguments score 1;
//   - bytes that are not JSON (which canonical args never are) form one
//     leaf at the root holding the raw bytes, so equal bytes still score 1.
//
// Leaves are compared through 64-bit FNV-1a hashes of their framed bytes;
// a leaf set is a sorted slice of distinct hashes.

type leafParser struct {
	s    string
	pos  int
	path []byte
	out  []uint64
	bad  bool
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// leafSet returns the sorted distinct leaf hashes of args, reusing dst's
// memory.
func (p *leafParser) leafSet(args string, dst []uint64) []uint64 {
	return p.appendLeafSet(args, dst[:0])
}

// appendLeafSet appends the sorted distinct leaf hashes of args to dst and
// returns the extended slice; the set is its tail from len(dst).
func (p *leafParser) appendLeafSet(args string, dst []uint64) []uint64 {
	base := len(dst)
	p.s, p.pos, p.path, p.out, p.bad = args, 0, p.path[:0], dst, false
	p.ws()
	if p.pos >= len(p.s) {
		p.bad = true
	} else {
		p.value(true)
		p.ws()
		if p.pos != len(p.s) {
			p.bad = true
		}
	}
	if p.bad {
		return append(p.out[:base], fnvString(fnv(fnvOffset, []byte{0xfe}), args))
	}
	set := p.out[base:]
	slices.Sort(set)
	return p.out[:base+len(slices.Compact(set))]
}

func (p *leafParser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *leafParser) leaf(scalar string) {
	h := fnv(fnvOffset, p.path)
	h ^= 0xff
	h *= fnvPrime
	p.out = append(p.out, fnvString(h, scalar))
}

func (p *leafParser) value(root bool) {
	if p.bad || p.pos >= len(p.s) {
		p.bad = true
		return
	}
	switch c := p.s[p.pos]; c {
	case '{':
		p.pos++
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			if !root {
				p.leaf("{}")
			}
			return
		}
		for !p.bad {
			p.ws()
			start := p.pos
			p.str()
			if p.bad {
				return
			}
			key := p.s[start:p.pos]
			p.ws()
			if p.pos >= len(p.s) || p.s[p.pos] != ':' {
				p.bad = true
				return
			}
			p.pos++
			p.ws()
			n := len(p.path)
			p.path = append(p.path, 'k')
			p.path = binary.AppendUvarint(p.path, uint64(len(key)))
			p.path = append(p.path, key...)
			p.value(false)
			p.path = p.path[:n]
			if p.endOrComma('}') {
				return
			}
		}
	case '[':
		p.pos++
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == ']' {
			p.pos++
			if !root {
				p.leaf("[]")
			}
			return
		}
		for i := 0; !p.bad; i++ {
			p.ws()
			n := len(p.path)
			p.path = append(p.path, 'i')
			p.path = binary.AppendUvarint(p.path, uint64(i))
			p.value(false)
			p.path = p.path[:n]
			if p.endOrComma(']') {
				return
			}
		}
	case '"':
		start := p.pos
		p.str()
		if !p.bad {
			p.leaf(p.s[start:p.pos])
		}
	default:
		start := p.pos
		for p.pos < len(p.s) {
			c := p.s[p.pos]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':' || c == '{' || c == '[' || c == '"' {
				break
			}
			p.pos++
		}
		if p.pos == start {
			p.bad = true
			return
		}
		p.leaf(p.s[start:p.pos])
	}
}

// str consumes a JSON string literal, quotes included.
func (p *leafParser) str() {
	if p.pos >= len(p.s) || p.s[p.pos] != '"' {
		p.bad = true
		return
	}
	p.pos++
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case '\\':
			p.pos += 2
		case '"':
			p.pos++
			return
		default:
			p.pos++
		}
	}
	p.bad = true
}

// jaccardCounts returns |a ∩ b| and |a ∪ b| of two sorted distinct sets.
func jaccardCounts(a, b []uint64) (inter, union int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return inter, len(a) + len(b) - inter
}

// ArgumentJaccard returns the Jaccard overlap of the leaf sets of two
// canonical JSON argument documents (1 when both sets are empty).
func ArgumentJaccard(a, b string) float64 {
	var p leafParser
	la := p.leafSet(a, nil)
	lb := p.leafSet(b, nil)
	inter, union := jaccardCounts(la, lb)
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

// endOrComma reads the white space and the separator after a member or element: it returns
// true when the container is closed by close, or on malformed input (p.bad set), and false
// after a comma, when another member or element follows.
func (p *leafParser) endOrComma(close byte) bool {
	p.ws()
	switch {
	case p.pos >= len(p.s):
		p.bad = true
		return true
	case p.s[p.pos] == close:
		p.pos++
		return true
	case p.s[p.pos] != ',':
		p.bad = true
		return true
	}
	p.pos++
	return false
}
