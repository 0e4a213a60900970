package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dittolab/ditto/metrics"
)

// The one number formatter of every rendering (the text tables, Markdown, HTML and the
// findings' sentences): a value, a p-value, an estimate with its SE, a rate with its interval
// print the same wherever they appear. A null value prints as "—". The JSON documents carry
// the numbers themselves.

// nullText is what a null value prints as.
const nullText = "—"

// num prints v with digits decimals.
func num(v metrics.Value, digits int) string {
	if !v.Valid {
		return nullText
	}
	return strconv.FormatFloat(v.V, 'f', digits, 64)
}

// pSmall is the p-value below which pValue switches to scientific notation.
const pSmall = 1e-4

// pValue prints a p-value (or a Benjamini–Hochberg adjusted one) with 4 decimals, and one
// below 0.0001 in scientific notation with 2 significant digits (1.2e-05): never as 0.0000.
func pValue(v metrics.Value) string {
	if !v.Valid {
		return nullText
	}
	if v.V != 0 && v.V < pSmall {
		return strconv.FormatFloat(v.V, 'e', 1, 64)
	}
	return strconv.FormatFloat(v.V, 'f', 4, 64)
}

// pEstimated prints a comparison's p-value as pValue does, followed by " ± " and its Monte
// Carlo standard error (2 significant digits) when the p-value was estimated from random
// relabellings: "0.0123 ± 0.0011".
func pEstimated(c metrics.Comparison) string {
	if !c.P.Valid || !c.PSE.Valid {
		return pValue(c.P)
	}
	return pValue(c.P) + " ± " + strconv.FormatFloat(c.PSE.V, 'g', 2, 64)
}

// estimate prints an estimate with 3 decimals, its jackknife SE after " ± " when it has one,
// and a leading "~" when it was sampled rather than computed exactly: "~0.412 ± 0.031".
func estimate(e metrics.Estimate) string {
	if !e.Value.Valid {
		return nullText
	}
	s := num(e.Value, 3)
	if e.Estimated {
		s = "~" + s
	}
	if e.SE.Valid {
		s += " ± " + num(e.SE, 3)
	}
	return s
}

// success prints a success rate and its Wilson 95% interval with digits decimals:
// "0.90 [0.60, 0.98]".
func success(s metrics.Success, digits int) string {
	if !s.Rate.Valid {
		return nullText
	}
	return num(s.Rate, digits) + " [" + num(s.WilsonLow, digits) + ", " + num(s.WilsonHi, digits) + "]"
}

// percentChange prints the change from a to b relative to |a|, signed, in whole percent
// ("+12%"); false when a is null, zero or b is null.
func percentChange(a, b metrics.Value) (string, bool) {
	if !a.Valid || !b.Valid || a.V == 0 {
		return "", false
	}
	return fmt.Sprintf("%+.0f%%", (b.V-a.V)/math.Abs(a.V)*100), true
}

// setting prints a setting (a level, a rate) in its shortest exact form: 0.05.
func setting(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Number prints v with digits decimals ("—" when null): this file's formatter for renderers
// outside the package (the web console), so that a number prints the same there.
func Number(v metrics.Value, digits int) string { return num(v, digits) }
