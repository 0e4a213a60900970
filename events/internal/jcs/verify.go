package jcs

import (
	"bytes"
	"unicode/utf8"
)

// isCanonicalFast reports whether raw is surely in canonical form, reading it once without
// writing the canonical form: values as Canonicalize writes them (no white space, keys in
// strictly increasing order, strings escaped as AppendString escapes them, integers of at most
// 15 digits and decimals of at most 15 significant digits in their shortest form, literals).
// It returns false for anything else, canonical or not (escaped keys, exponents, longer
// numbers, nesting beyond maxDepth), which the canonicalizer then decides. Validation checks
// every JSON value an event carries, and those are canonical: the verdict is nearly always
// true, for about the cost of reading the value once.
func isCanonicalFast(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	v := verifier{in: raw}
	return v.value(0) && v.pos == len(raw)
}

type verifier struct {
	in  []byte
	pos int
}

func (v *verifier) value(depth int) bool {
	if depth > maxDepth || v.pos >= len(v.in) {
		return false
	}
	switch ch := v.in[v.pos]; {
	case ch == '{':
		return v.object(depth)
	case ch == '[':
		return v.array(depth)
	case ch == '"':
		return v.str()
	case ch == '-' || ch >= '0' && ch <= '9':
		return v.number()
	case ch == 't':
		return v.literal("true")
	case ch == 'f':
		return v.literal("false")
	case ch == 'n':
		return v.literal("null")
	}
	return false
}

func (v *verifier) literal(lit string) bool {
	if len(v.in)-v.pos < len(lit) || string(v.in[v.pos:v.pos+len(lit)]) != lit {
		return false
	}
	v.pos += len(lit)
	return true
}

// object accepts an object whose keys have no escapes and increase strictly in UTF-16 order
// (sorted, none repeated).
func (v *verifier) object(depth int) bool {
	v.pos++ // '{'
	if v.pos < len(v.in) && v.in[v.pos] == '}' {
		v.pos++
		return true
	}
	var prev []byte
	prevASCII := true
	for n := 0; ; n++ {
		if v.pos >= len(v.in) || v.in[v.pos] != '"' {
			return false
		}
		start := v.pos + 1
		ascii := true
		j := start
		for ; j < len(v.in); j++ {
			c := v.in[j]
			if c == '"' {
				break
			}
			if c == '\\' || c < 0x20 {
				return false
			}
			if c >= utf8.RuneSelf {
				ascii = false
			}
		}
		if j >= len(v.in) {
			return false
		}
		key := v.in[start:j]
		if n > 0 {
			// For ASCII keys UTF-16 order is byte order.
			if ascii && prevASCII {
				if bytes.Compare(prev, key) >= 0 {
					return false
				}
			} else if compareUTF16(prev, key) >= 0 {
				return false
			}
		}
		prev, prevASCII = key, ascii
		v.pos = j + 1
		if v.pos >= len(v.in) || v.in[v.pos] != ':' {
			return false
		}
		v.pos++
		if !v.value(depth + 1) {
			return false
		}
		if v.pos >= len(v.in) {
			return false
		}
		switch v.in[v.pos] {
		case ',':
			v.pos++
		case '}':
			v.pos++
			return true
		default:
			return false
		}
	}
}

func (v *verifier) array(depth int) bool {
	v.pos++ // '['
	if v.pos < len(v.in) && v.in[v.pos] == ']' {
		v.pos++
		return true
	}
	for {
		if !v.value(depth + 1) {
			return false
		}
		if v.pos >= len(v.in) {
			return false
		}
		switch v.in[v.pos] {
		case ',':
			v.pos++
		case ']':
			v.pos++
			return true
		default:
			return false
		}
	}
}

// str accepts a string literal as AppendString writes its value: '"' and '\\' escaped as
// \" and \\, the control characters \b, \f, \n, \r and \t as such and the others as \u00xx
// (lowercase hex), nothing else escaped. (The input is valid UTF-8, checked whole.)
func (v *verifier) str() bool {
	j := v.pos + 1
	for j < len(v.in) {
		c := v.in[j]
		switch {
		case c == '"':
			v.pos = j + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			j++
			continue
		}
		if j+1 >= len(v.in) {
			return false
		}
		switch v.in[j+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			j += 2
		case 'u':
			if j+6 > len(v.in) || v.in[j+2] != '0' || v.in[j+3] != '0' {
				return false
			}
			hi, lo := v.in[j+4], v.in[j+5]
			if hi != '0' && hi != '1' {
				return false
			}
			var x byte
			switch {
			case lo >= '0' && lo <= '9':
				x = lo - '0'
			case lo >= 'a' && lo <= 'f':
				x = lo - 'a' + 10
			default:
				return false
			}
			x += (hi - '0') << 4
			switch x {
			case '\b', '\f', '\n', '\r', '\t':
				return false // written as \b, \f, \n, \r, \t
			}
			j += 6
		default:
			return false // \/ and \u escapes of other characters are written as the characters
		}
	}
	return false
}

// number accepts an integer of at most 15 digits other than -0 (an exact double, which
// ECMAScript prints digit for digit), and a decimal without exponent whose last digit is not
// 0, of at most 15 significant digits, and, below 1, with at most 5 zeros after the point: a
// decimal of at most 15 significant digits is the shortest that reads back as the double it
// reads as (binary64 keeps 15 decimal digits), and ECMAScript prints such a double as that
// decimal.
func (v *verifier) number() bool {
	i := v.pos
	neg := v.in[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i < len(v.in) && v.in[i] == '0':
		i++
	case i < len(v.in) && v.in[i] >= '1' && v.in[i] <= '9':
		for i < len(v.in) && v.in[i] >= '0' && v.in[i] <= '9' {
			i++
		}
	default:
		return false
	}
	intDigits := i - intStart
	zeroInt := intDigits == 1 && v.in[intStart] == '0'
	sig := intDigits
	if i < len(v.in) && v.in[i] == '.' {
		i++
		fracStart := i
		for i < len(v.in) && v.in[i] >= '0' && v.in[i] <= '9' {
			i++
		}
		frac := v.in[fracStart:i]
		if len(frac) == 0 || frac[len(frac)-1] == '0' {
			return false
		}
		if zeroInt {
			zeros := 0
			for zeros < len(frac) && frac[zeros] == '0' {
				zeros++
			}
			if zeros > 5 {
				return false
			}
			sig = len(frac) - zeros
		} else {
			sig += len(frac)
		}
	} else if neg && zeroInt {
		return false // -0 is written 0
	}
	if sig > 15 {
		return false
	}
	if i < len(v.in) {
		switch v.in[i] {
		case ',', ']', '}':
		default:
			return false // an exponent, or what the grammar refuses
		}
	}
	v.pos = i
	return true
}
