package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/words"
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

// signed prints a difference with digits decimals and its sign: "+0.250", "−12" (a minus
// sign, as B − A prints).
func signed(v metrics.Value, digits int) string {
	if !v.Valid {
		return nullText
	}
	s := strconv.FormatFloat(math.Abs(v.V), 'f', digits, 64)
	switch {
	case strings.Trim(s, "0.") == "":
		return s
	case v.V < 0:
		return "−" + s
	}
	return "+" + s
}

// millis prints a latency in milliseconds, whole, with its unit: "1234 ms".
func millis(v metrics.Value) string {
	if !v.Valid {
		return nullText
	}
	return num(v, 0) + " ms"
}

// interval95 is the normal 95% interval of an estimate from its jackknife SE.
func interval95(e metrics.Estimate) (lo, hi float64, ok bool) {
	if !e.Value.Valid || !e.SE.Valid {
		return 0, 0, false
	}
	return e.Value.V - 1.96*e.SE.V, e.Value.V + 1.96*e.SE.V, true
}

// maxBoundNotes is how many intervals boundNotes names before counting the rest.
const maxBoundNotes = 8

// boundNotes says which 95% intervals (±1.96 jackknife SE) of the agreement metrics, all
// shares in [0, 1], reach past 0 or 1 at the 3 decimals they print with: the normal interval
// is rough that near a bound, and the plots draw it clipped there.
func boundNotes(cells []analysis.Cell) []string {
	var out []string
	n := 0
	for _, c := range cells {
		for _, q := range []struct {
			name string
			e    metrics.Estimate
		}{{"RR", c.Metrics.RR}, {"DI", c.Metrics.DI}, {"TSS", c.Metrics.TSS}, {"AC", c.Metrics.AC}} {
			lo, hi, ok := interval95(q.e)
			if !ok || (lo > -0.0005 && hi < 1.0005) {
				continue
			}
			n++
			if len(out) < maxBoundNotes {
				out = append(out, fmt.Sprintf("%s of %s · %s · %s, %s, gives [%s, %s]", q.name, c.Task, c.Model, c.Condition,
					estimate(q.e), signedNum(lo), signedNum(hi)))
			}
		}
	}
	if n == 0 {
		return nil
	}
	s := "95% intervals (±1.96 jackknife SE) that leave [0, 1], the range of a share — the normal interval is rough this near 0 or 1, " +
		"and the plots clip it there: " + strings.Join(out, "; ")
	if n > len(out) {
		s += fmt.Sprintf("; and %d more", n-len(out))
	}
	return []string{s}
}

// signedNum prints x with 3 decimals and a minus sign (−0.054) when negative.
func signedNum(x float64) string {
	if x < 0 {
		return "−" + num(metrics.Some(-x), 3)
	}
	return num(metrics.Some(x), 3)
}

// inputGroups says what a production cell's pairwise metrics stand on: its input groups of 2
// runs or more, the runs in them and the runs seen once ("4 (12 runs, 1 single)"); "" for a
// harness cell.
func inputGroups(g *metrics.InputGroups) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf("%d (%d runs, %d single)", g.Groups, g.GroupedRuns, g.SingleRuns)
}

// anyInputGroups reports whether a cell's pairwise metrics were taken within input groups.
func anyInputGroups(cells []analysis.Cell) bool {
	for _, c := range cells {
		if c.Metrics.InputGroups != nil {
			return true
		}
	}
	return false
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

// doubleDigits is the number of significant digits a float64 holds for certain (DBL_DIG):
// what lies beyond them in a computed value (5551.392600000001) is rounding noise.
const doubleDigits = 15

// Decimal prints a number whose precision ditto does not know (a DOUBLE in a query's answer)
// rounded to the 15 significant digits a float64 holds, trailing zeros dropped: 5551.3926, not
// 5551.392600000001; 0.3, not 0.30000000000000004. Machine formats (JSON, CSV, Arrow,
// Parquet) carry the exact value.
func Decimal(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'e', doubleDigits-1, 64), 64)
	if err != nil {
		r = x
	}
	if r == 0 {
		return "0"
	}
	if a := math.Abs(r); a >= 1e-4 && a < 1e15 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// period names a window's length as the subject of "the last …": "hour", "day", "week" for
// exactly one of them, else the duration in words (words.Duration: "30 minutes", "2 days").
func period(d time.Duration) string {
	switch d {
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	case 7 * 24 * time.Hour:
		return "week"
	}
	w := words.Duration(d)
	if unit, ok := strings.CutPrefix(w, "1 "); ok && !strings.Contains(unit, " ") {
		return unit
	}
	return w
}

// Number prints v with digits decimals ("—" when null): this file's formatter for renderers
// outside the package (the web console), so that a number prints the same there.
func Number(v metrics.Value, digits int) string { return num(v, digits) }
