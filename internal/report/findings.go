package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/metrics"
)

// higherIsBetter says, for each quantity, which direction a reader wants.
var higherIsBetter = map[string]bool{
	metrics.QuantitySuccess: true,
	metrics.QuantityRR:      true,
	metrics.QuantityDI:      true,
	metrics.QuantityTSS:     true,
	metrics.QuantityAC:      true,
	metrics.QuantityTokens:  false,
	metrics.QuantityLatency: false,
}

// IsBad reports whether a comparison is significant with B worse than A: RR, DI, TSS, AC or
// success down, tokens or latency up.
func IsBad(c metrics.Comparison) bool {
	if !c.Significant || !c.Difference.Valid || c.Difference.V == 0 {
		return false
	}
	up, known := higherIsBetter[c.Quantity]
	if !known {
		return false
	}
	return (c.Difference.V < 0) == up
}

// componentTitles name harness components for sentences.
var componentTitles = map[string]string{
	"fsm":                 "finite-state execution",
	"forced_tool":         "forced tool choice",
	"validation":          "output validation",
	"retry":               "bounded retry",
	"structured_planning": "Structured Planning",
	"schema_gate":         "the argument-schema gate",
	"permission_gate":     "the permission gate",
	"circuit_breaker":     "the circuit breaker",
}

func componentTitle(c string) string {
	if t, ok := componentTitles[c]; ok {
		return t
	}
	return c
}

func quantityLabel(q string) string {
	switch q {
	case metrics.QuantitySuccess:
		return "the success rate"
	case metrics.QuantityRR:
		return "RR"
	case metrics.QuantityDI:
		return "DI"
	case metrics.QuantityTSS:
		return "TSS"
	case metrics.QuantityAC:
		return "AC"
	case metrics.QuantityTokens:
		return "median tokens per run"
	case metrics.QuantityLatency:
		return "median latency"
	}
	return q
}

// valueText prints a compared value in a sentence: rates with 2 decimals, tokens and latency
// (with its unit) whole.
func valueText(q string, v metrics.Value) string {
	switch q {
	case metrics.QuantityTokens:
		return num(v, 0)
	case metrics.QuantityLatency:
		if !v.Valid {
			return nullText
		}
		return num(v, 0) + " ms"
	}
	return num(v, 2)
}

// qText states a finding's Benjamini–Hochberg adjusted p as the tables print it.
func qText(p metrics.Value) string { return "q = " + pValue(p) }

// componentsOf returns a condition's components: as the runs recorded them, or else as the
// condition's name says.
func componentsOf(cells []CellInfo, task, model, cond string) []string {
	for _, c := range cells {
		if (task == "" || c.Task == task) && c.Model == model && c.Condition == cond {
			return c.Components
		}
	}
	if hc, err := condition.Parse(cond); err == nil {
		return hc.Components.Names()
	}
	return nil
}

func simulated(cells []CellInfo, model string) bool {
	for _, c := range cells {
		if c.Model == model && c.Simulated {
			return true
		}
	}
	return false
}

// namedConditions describe the research's conditions by their sorted components, for
// comparisons against baseline (no component).
var namedConditions = map[string]string{
	"circuit_breaker,forced_tool,fsm,permission_gate,retry,schema_gate,validation":                     "The harness",
	"circuit_breaker,forced_tool,fsm,permission_gate,retry,schema_gate,structured_planning,validation": "The harness with Structured Planning",
}

// changeName names what differs between conditions A and B, as the subject of a sentence.
func changeName(cells []CellInfo, task, model, a, b string, production bool) string {
	if production {
		return fmt.Sprintf("Release %s (after %s)", b, a)
	}
	ca, cb := componentsOf(cells, task, model, a), componentsOf(cells, task, model, b)
	var added, removed []string
	for _, c := range cb {
		if !slices.Contains(ca, c) {
			added = append(added, componentTitle(c))
		}
	}
	for _, c := range ca {
		if !slices.Contains(cb, c) {
			removed = append(removed, componentTitle(c))
		}
	}
	if len(ca) == 0 && len(removed) == 0 {
		if named, ok := namedConditions[strings.Join(cb, ",")]; ok {
			return named
		}
	}
	switch {
	case len(added) == 1 && len(removed) == 0:
		return upperFirst(added[0])
	case len(added) > 1 && len(removed) == 0:
		return fmt.Sprintf("The %s condition (%s)", b, joinAnd(added))
	case len(added) == 0 && len(removed) > 0:
		return "Removing " + joinAnd(removed)
	}
	return fmt.Sprintf("Condition %s (against %s)", b, a)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func modelText(cells []CellInfo, model string) string {
	if simulated(cells, model) {
		return model + " (simulated)"
	}
	return model
}

// studyFindings makes one finding per significant (task, model, A, B, quantity); when a
// quantity has two tests (Fisher and McNemar) the first significant one speaks.
func studyFindings(mr *analysis.Result, cells []CellInfo) []Finding {
	out := []Finding{}
	seen := map[string]bool{}
	production := mr.Study.SourceKind == "production"
	for _, c := range mr.Comparisons {
		if !c.Significant || !c.P.Valid || !c.Difference.Valid || c.Difference.V == 0 {
			continue
		}
		key := strings.Join([]string{c.Task, c.Model, c.ConditionA, c.ConditionB, c.Quantity}, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		verb := "raised"
		if c.Difference.V < 0 {
			verb = "lowered"
		}
		s := fmt.Sprintf("%s %s %s from %s to %s for %s on %s%s, %s",
			changeName(cells, c.Task, c.Model, c.ConditionA, c.ConditionB, production), verb, quantityLabel(c.Quantity),
			valueText(c.Quantity, c.ValueA), valueText(c.Quantity, c.ValueB), modelText(cells, c.Model), c.Task,
			groupsClause(c.Quantity, cellGroups(mr, c.Task, c.Model, c.ConditionA), cellGroups(mr, c.Task, c.Model, c.ConditionB)), qText(c.PAdjusted))
		s += costClause(mr.Comparisons, c)
		out = append(out, Finding{Task: c.Task, Model: c.Model, ConditionA: c.ConditionA, ConditionB: c.ConditionB,
			Quantity: c.Quantity, ValueA: c.ValueA, ValueB: c.ValueB, PAdjusted: c.PAdjusted, Direction: direction(c.Difference),
			Bad: IsBad(c.Comparison), IncompleteRuns: incompleteIn(mr, c.Task, c.Model, c.ConditionA, c.ConditionB), Sentence: s + "."})
	}
	return out
}

// costClause tells what the change cost in median latency and tokens, for quantities other
// than those two: ", at +12% median latency and −30% median tokens".
func costClause(all []analysis.Comparison, c analysis.Comparison) string {
	if c.Quantity == metrics.QuantityLatency || c.Quantity == metrics.QuantityTokens {
		return ""
	}
	var parts []string
	for _, q := range []string{metrics.QuantityLatency, metrics.QuantityTokens} {
		for _, o := range all {
			if o.Task == c.Task && o.Model == c.Model && o.ConditionA == c.ConditionA && o.ConditionB == c.ConditionB && o.Quantity == q {
				if p, ok := percentChange(o.ValueA, o.ValueB); ok {
					parts = append(parts, p+" "+quantityLabel(q))
				}
				break
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", at " + strings.Join(parts, " and ")
}

// cellGroups returns the input groups of a cell of mr (nil for a harness cell).
func cellGroups(mr *analysis.Result, task, model, cond string) *metrics.InputGroups {
	if c := mr.Cell(analysis.CellKey{Task: task, Model: model, Condition: cond}); c != nil {
		return c.Metrics.InputGroups
	}
	return nil
}

// groupsClause says how many input groups a pairwise quantity of production traffic stands
// on: " (within 4 and 4 input groups)"; "" for other quantities and harness cells.
func groupsClause(q string, a, b *metrics.InputGroups) string {
	if w := groupsWords(q, a, b); w != "" {
		return " (" + w + ")"
	}
	return ""
}

func groupsWords(q string, a, b *metrics.InputGroups) string {
	if a == nil || b == nil {
		return ""
	}
	switch q {
	case metrics.QuantityRR, metrics.QuantityDI, metrics.QuantityTSS, metrics.QuantityAC:
		return fmt.Sprintf("within %d and %d input groups", a.Groups, b.Groups)
	}
	return ""
}

// driftGroups is groupsWords after the runs of a drift finding: ", within 4 and 3 input groups".
func driftGroups(q string, a, b *metrics.InputGroups) string {
	if w := groupsWords(q, a, b); w != "" {
		return ", " + w
	}
	return ""
}

// driftFindings makes one finding per significant window comparison.
// incomplete holds the incomplete runs of both windows per (task, model) (Condition empty).
func driftFindings(ds []analysis.WindowComparison, window time.Duration, cells []CellInfo, incomplete map[analysis.CellKey]int64) []Finding {
	out := []Finding{}
	for _, d := range ds {
		seen := map[string]bool{}
		for _, c := range d.Comparisons {
			if !c.Significant || !c.P.Valid || !c.Difference.Valid || c.Difference.V == 0 || seen[c.Quantity] {
				continue
			}
			seen[c.Quantity] = true
			verb := "rose"
			if c.Difference.V < 0 {
				verb = "fell"
			}
			s := fmt.Sprintf("In the last %s, %s of %s on %s %s from %s to %s compared with the %s before (%d and %d runs%s), %s.",
				period(window), quantityLabel(c.Quantity), d.Cell.Task, modelText(cells, d.Cell.Model), verb,
				valueText(c.Quantity, c.ValueA), valueText(c.Quantity, c.ValueB), period(window), c.NA, c.NB,
				driftGroups(c.Quantity, d.A.Metrics.InputGroups, d.B.Metrics.InputGroups), qText(c.PAdjusted))
			out = append(out, Finding{Task: d.Cell.Task, Model: d.Cell.Model, ConditionA: "previous window", ConditionB: "last window",
				Quantity: c.Quantity, ValueA: c.ValueA, ValueB: c.ValueB, PAdjusted: c.PAdjusted, Direction: direction(c.Difference),
				Bad: IsBad(c), IncompleteRuns: incomplete[analysis.CellKey{Task: d.Cell.Task, Model: d.Cell.Model}], Sentence: s})
		}
	}
	return out
}

// direction says which way B moved from A.
func direction(d metrics.Value) string {
	if d.Valid && d.V < 0 {
		return "lower"
	}
	return "higher"
}

// incompleteIn counts the incomplete runs (a gap or a refused event: FoldErrors) of the cells
// a comparison sets side by side: task and model, conditions a and b, any of them pooled
// (analysis.AnyCondition) matching every cell.
func incompleteIn(mr *analysis.Result, task, model, a, b string) int64 {
	is := func(x, want string) bool { return want == analysis.AnyCondition || x == want }
	var n int64
	for _, c := range mr.Cells {
		if is(c.Task, task) && is(c.Model, model) && (is(c.Condition, a) || is(c.Condition, b)) {
			n += c.Data.FoldErrors
		}
	}
	return n
}

// heldText says why a bad finding is not alerted ("" when it is not held back).
func heldText(f Finding) string {
	if !f.Bad || f.IncompleteRuns == 0 {
		return ""
	}
	return fmt.Sprintf("No alert: the compared cells hold %d incomplete %s (a gap in the history or a refused event), out of every metric; the alert waits until their history is whole.",
		f.IncompleteRuns, runsWord(f.IncompleteRuns))
}

func runsWord(n int64) string {
	if n == 1 {
		return "run"
	}
	return "runs"
}
