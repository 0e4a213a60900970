package jcs

import (
	"math"
	"strconv"
	"strings"
)

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
