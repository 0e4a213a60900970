package jcs

import (
	"unicode/utf16"
	"unicode/utf8"
)

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 sorts object keys.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua[0] != ub[0] {
				return int(ua[0]) - int(ub[0])
			}
			return int(ua[1]) - int(ub[1])
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Units returns r's UTF-16 code units (the second is 0 for a single unit).
func utf16Units(r rune) [2]uint16 {
	if r >= 0x10000 {
		r1, r2 := utf16.EncodeRune(r)
		return [2]uint16{uint16(r1), uint16(r2)}
	}
	return [2]uint16{uint16(r), 0}
}

// AppendString writes s as a JCS string: only '"', '\\' and control characters are escaped.
func AppendString[S ~string | ~[]byte](out []byte, s S) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"':
			out = append(out, '\\', '"')
		case ch == '\\':
			out = append(out, '\\', '\\')
		case ch >= 0x20:
			out = append(out, ch)
		case ch == '\b':
			out = append(out, '\\', 'b')
		case ch == '\f':
			out = append(out, '\\', 'f')
		case ch == '\n':
			out = append(out, '\\', 'n')
		case ch == '\r':
			out = append(out, '\\', 'r')
		case ch == '\t':
			out = append(out, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&15])
		}
	}
	return append(out, '"')
}
