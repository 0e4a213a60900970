package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dittolab/ditto/metrics"
)

// Table is a table of text cells, the form both the Markdown and the HTML writers render.
type Table struct {
	// ID names the table in the HTML report (its id attribute), when set.
	ID     string
	Header []string
	Rows   [][]string
	// Flag marks rows to highlight (bad findings), by index.
	Flag map[int]bool
}

func spread(s metrics.Summary, prec int) string {
	if s.N == 0 {
		return nullText
	}
	return num(s.Mean, prec) + " ± " + num(s.SD, prec)
}

func quartiles(s metrics.Summary, prec int) string {
	if s.N == 0 {
		return nullText
	}
	return num(s.Median, prec) + " (IQR " + num(s.IQR, prec) + ", p95 " + num(s.P95, prec) + ")"
}

func passK(ps []metrics.PassK) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, strconv.Itoa(p.K)+": "+num(metrics.Some(p.Value), 2))
	}
	if len(parts) == 0 {
		return nullText
	}
	return strings.Join(parts, ", ")
}

func activity(a metrics.Activity) string {
	return num(a.RetriesPerRun, 2) + " / " + num(a.PlanRepromptsPerRun, 2) + " / " + num(a.RejectedToolCallsPerRun, 2) + " / " + num(a.EscalationsPerRun, 2)
}

// CellTable is the per-cell table of a study report.
func (r *Report) CellTable() Table {
	t := Table{Header: []string{"task", "model", "condition", "N", "success [95% CI]", "pass^k", "RR ± SE", "DI ± SE",
		"DI tools / states / output", "TSS ± SE", "AC ± SE", "plan agr.", "outputs", "tokens mean ± SD", "tokens median (IQR, p95)",
		"latency ms mean ± SD", "latency ms median (IQR, p95)", "retries / re-prompts / rejected / escalations per run"}}
	if r.Metrics == nil {
		return t
	}
	grouped := anyInputGroups(r.Metrics.Cells)
	if grouped {
		t.Header = slices.Insert(t.Header, 4, inputGroupsHeader)
	}
	for _, c := range r.Metrics.Cells {
		m := c.Metrics
		model := c.Model
		if simulated(r.Cells, c.Model) {
			model += " (sim)"
		}
		row := []string{c.Task, model, c.Condition, strconv.Itoa(m.N), success(m.Success, 2), passK(m.PassK),
			estimate(m.RR), estimate(m.DI), num(m.ToolsAgree.Value, 2) + " / " + num(m.StatesAgree.Value, 2) + " / " + num(m.OutputAgree.Value, 2),
			estimate(m.TSS), estimate(m.AC), num(m.PlanAgree.Value, 2), strconv.Itoa(m.DistinctOutputs),
			spread(m.Tokens, 0), quartiles(m.Tokens, 0), spread(m.Latency, 0), quartiles(m.Latency, 0), activity(m.Harness)}
		if grouped {
			row = slices.Insert(row, 4, inputGroups(m.InputGroups))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// inputGroupsHeader heads the column of what a production cell's pairwise metrics stand on.
const inputGroupsHeader = "input groups (runs, single)"

func verdict(c metrics.Comparison) string {
	switch {
	case !c.P.Valid:
		return nullText + " " + c.Reason
	case c.Significant && IsBad(c):
		return "significant (worse)"
	case c.Significant:
		return "significant"
	}
	return "n.s."
}

func testText(c metrics.Comparison) string {
	if c.Method != "" {
		return c.Test + " (" + c.Method + ")"
	}
	return c.Test
}

func diffPrec(q string) int {
	if q == metrics.QuantityTokens || q == metrics.QuantityLatency {
		return 0
	}
	return 3
}

// ComparisonTable is the comparison table: test, statistic, p, BH-adjusted p, verdict, effect
// size (Cliff's δ for Mann–Whitney).
func (r *Report) ComparisonTable() Table {
	t := Table{Header: []string{"task", "model", "A", "B", "quantity", "A value", "B value", "B − A", "test", "statistic", "p", "q (BH)", "verdict", "effect size"},
		Flag: map[int]bool{}}
	add := func(task, model, a, b string, c metrics.Comparison) {
		pr := diffPrec(c.Quantity)
		if IsBad(c) {
			t.Flag[len(t.Rows)] = true
		}
		t.Rows = append(t.Rows, []string{task, model, a, b, c.Quantity, num(c.ValueA, pr), num(c.ValueB, pr), num(c.Difference, pr),
			testText(c), num(c.Statistic, 3), pEstimated(c), pValue(c.PAdjusted), verdict(c), num(c.EffectSize, 3)})
	}
	if r.Metrics != nil {
		for _, c := range r.Metrics.Comparisons {
			add(c.Task, c.Model, c.ConditionA, c.ConditionB, c.Comparison)
		}
	}
	for _, d := range r.Drift {
		for _, c := range d.Comparisons {
			add(d.Cell.Task, d.Cell.Model, "previous window", "last window", c)
		}
	}
	return t
}

// SplitComparisons splits the comparison table into the rows a reader needs first (significant,
// or not computable with the reason why) and the rows whose test found no significant
// difference (n.s.), which the HTML report folds away: a 54-run study compares 144 quantities.
func (r *Report) SplitComparisons() (shown, ns Table) {
	all := r.ComparisonTable()
	shown = Table{Header: all.Header, Flag: map[int]bool{}}
	ns = Table{Header: all.Header, Flag: map[int]bool{}}
	verdictCol := slices.Index(all.Header, "verdict")
	for i, row := range all.Rows {
		t := &shown
		if row[verdictCol] == "n.s." {
			t = &ns
		}
		if all.Flag[i] {
			t.Flag[len(t.Rows)] = true
		}
		t.Rows = append(t.Rows, row)
	}
	return shown, ns
}

// DriftTable is the per-window table of a drift report.
func (r *Report) DriftTable() Table {
	t := Table{Header: []string{"task", "model", "window", "N", "success [95% CI]", "RR ± SE", "DI ± SE", "TSS ± SE", "AC ± SE",
		"tokens median (IQR, p95)", "latency ms median (IQR, p95)"}}
	grouped := anyInputGroups(r.windowCells())
	if grouped {
		t.Header = slices.Insert(t.Header, 4, inputGroupsHeader)
	}
	for _, d := range r.Drift {
		for _, w := range []struct {
			name string
			m    metrics.CellMetrics
		}{{"previous " + d.A.Window.String(), d.A.Metrics}, {"last " + d.B.Window.String(), d.B.Metrics}} {
			m := w.m
			row := []string{d.Cell.Task, modelText(r.Cells, d.Cell.Model), w.name, strconv.Itoa(m.N), success(m.Success, 2),
				estimate(m.RR), estimate(m.DI), estimate(m.TSS), estimate(m.AC), quartiles(m.Tokens, 0), quartiles(m.Latency, 0)}
			if grouped {
				row = slices.Insert(row, 4, inputGroups(m.InputGroups))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// BasisTable lists the data the report stands on.
func (r *Report) BasisTable() Table {
	b := r.Basis
	opt := func(s *string) string {
		if s == nil {
			return nullText
		}
		return *s
	}
	var models []string
	for _, m := range b.Models {
		if m.Simulated {
			models = append(models, m.Name+" (simulated)")
		} else {
			models = append(models, m.Name)
		}
	}
	t := Table{Header: []string{"", ""}}
	t.Rows = [][]string{
		{"events", strconv.FormatInt(b.Events, 10)},
		{"time window of the events", opt(b.FirstEvent) + " — " + opt(b.LastEvent)},
		{"runs counted in the metrics", strconv.FormatInt(b.CountedRuns, 10)},
	}
	production := r.Kind == KindDrift || (r.Metrics != nil && r.Metrics.Study.SourceKind == "production")
	if r.Kind == KindStudy {
		expected := nullText + " (production traffic has no planned count)"
		if b.ExpectedRuns != nil {
			expected = strconv.FormatInt(*b.ExpectedRuns, 10)
		} else if !production {
			expected = nullText + " (no study definition was stored)"
		}
		t.Rows = append(t.Rows,
			[]string{"runs seen", strconv.FormatInt(b.Runs, 10)},
			[]string{"runs expected (study definition)", expected},
			[]string{"incomplete runs (no finished attempt)", strconv.FormatInt(b.IncompleteRuns, 10)},
			[]string{"superseded attempts (crash recovery)", strconv.FormatInt(b.SupersededAttempts, 10)},
			[]string{"runs with fold errors", strconv.FormatInt(b.FoldErrors, 10)})
	} else {
		t.Rows = append(t.Rows, []string{"previous window", b.WindowA}, []string{"last window", b.WindowB})
	}
	if production {
		// A producer's receiver refuses bad events before the stream: only it counts them.
		t.Rows = append(t.Rows,
			[]string{"messages on the stream that could not be stored", strconv.FormatInt(b.RejectedEvents, 10)},
			[]string{"events the producer refused", nullText + " (not seen here: the producer counts them, ditto_ingest_events_rejected_total on its /metrics)"})
	} else {
		t.Rows = append(t.Rows, []string{"rejected events", strconv.FormatInt(b.RejectedEvents, 10)})
	}
	t.Rows = append(t.Rows, []string{"models", strings.Join(models, ", ")})
	if r.Metrics != nil {
		s := r.Metrics.Settings
		t.Rows = append(t.Rows, []string{"tests", "permutations " + strconv.Itoa(s.Permutations) + ", seed " + strconv.FormatUint(s.Seed, 10) +
			", Benjamini–Hochberg at " + setting(s.FDRLevel) + " across the report's " + strconv.Itoa(len(r.Metrics.Comparisons)) + " comparisons"})
	}
	return t
}

// summaryQuantities are the columns of SummaryTable.
var summaryQuantities = []string{metrics.QuantitySuccess, metrics.QuantityRR, metrics.QuantityDI, metrics.QuantityTSS,
	metrics.QuantityAC, metrics.QuantityTokens, metrics.QuantityLatency}

// SummaryTable says, per model and pair of conditions, what the change did to each quantity
// across tasks: "↑2/3" means significantly higher in 2 of the 3 tasks compared (after the
// Benjamini–Hochberg adjustment), "↓" lower, "·" no significant difference.
func (r *Report) SummaryTable() Table {
	t := Table{Header: []string{"model", "change"}}
	for _, q := range summaryQuantities {
		t.Header = append(t.Header, quantityShort(q))
	}
	if r.Metrics == nil {
		return t
	}
	type rowKey struct{ model, a, b string }
	type count struct {
		up, down int
		tasks    map[string]bool
	}
	var order []rowKey
	counts := map[rowKey]map[string]*count{}
	seen := map[string]bool{}
	for _, c := range r.Metrics.Comparisons {
		k := rowKey{c.Model, c.ConditionA, c.ConditionB}
		if counts[k] == nil {
			counts[k] = map[string]*count{}
			order = append(order, k)
		}
		cq := counts[k][c.Quantity]
		if cq == nil {
			cq = &count{tasks: map[string]bool{}}
			counts[k][c.Quantity] = cq
		}
		cq.tasks[c.Task] = true
		id := c.Task + "\x00" + c.Model + "\x00" + c.ConditionA + "\x00" + c.ConditionB + "\x00" + c.Quantity
		if seen[id] || !c.Significant || !c.Difference.Valid || c.Difference.V == 0 {
			continue
		}
		seen[id] = true
		if c.Difference.V > 0 {
			cq.up++
		} else {
			cq.down++
		}
	}
	production := r.Metrics.Study.SourceKind == "production"
	for _, k := range order {
		row := []string{modelText(r.Cells, k.model), strings.TrimPrefix(changeName(r.Cells, "", k.model, k.a, k.b, production), "The ") + " vs " + k.a}
		for _, q := range summaryQuantities {
			c := counts[k][q]
			if c == nil {
				row = append(row, "")
				continue
			}
			n := strconv.Itoa(len(c.tasks))
			var parts []string
			if c.up > 0 {
				parts = append(parts, "↑"+strconv.Itoa(c.up)+"/"+n)
			}
			if c.down > 0 {
				parts = append(parts, "↓"+strconv.Itoa(c.down)+"/"+n)
			}
			if len(parts) == 0 {
				parts = append(parts, "·")
			}
			row = append(row, strings.Join(parts, " "))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func quantityShort(q string) string {
	switch q {
	case metrics.QuantityTokens:
		return "tokens"
	case metrics.QuantityLatency:
		return "latency"
	case metrics.QuantitySuccess:
		return "success"
	}
	return strings.ToUpper(q)
}
