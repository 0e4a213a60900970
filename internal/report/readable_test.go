package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

// readableReport is a small study report: two cells of one task and model, one RR interval
// reaching past 1, one cell whose RR is unknown, one significant comparison and three n.s.
func readableReport(kind string) *Report {
	a := analysis.CellKey{Task: "credit_ecl", Model: "sim-steady", Condition: "harness"}
	b := analysis.CellKey{Task: "credit_ecl", Model: "sim-steady", Condition: "harness_sp"}
	est := func(v, se float64) metrics.Estimate {
		return metrics.Estimate{Value: metrics.Some(v), SE: metrics.Some(se)}
	}
	cellA := metrics.CellMetrics{N: 8, RR: est(0.9, 0.08), DI: est(0.95, 0.02), TSS: est(0.5, 0.1), AC: est(0.6, 0.1),
		Success: metrics.Success{Rate: metrics.Some(0.75), WilsonLow: metrics.Some(0.41), WilsonHi: metrics.Some(0.93)},
		Tokens:  metrics.Summary{N: 8, Median: metrics.Some(2000)}, Latency: metrics.Summary{N: 8, Median: metrics.Some(1500)},
		Divergence: []metrics.Value{metrics.Some(0), metrics.Some(0.2)}}
	cellB := metrics.CellMetrics{N: 1, DI: est(1, 0), Tokens: metrics.Summary{N: 1, Median: metrics.Some(1800)},
		Latency: metrics.Summary{N: 1, Median: metrics.Some(1400)}, Divergence: []metrics.Value{metrics.Some(0)}}
	cmp := func(q string, va, vb, p float64, sig bool) analysis.Comparison {
		return analysis.Comparison{Task: a.Task, Model: a.Model, ConditionA: a.Condition, ConditionB: b.Condition,
			Comparison: metrics.Comparison{Quantity: q, Test: "permutation", ValueA: metrics.Some(va), ValueB: metrics.Some(vb),
				Difference: metrics.Some(vb - va), P: metrics.Some(p), PAdjusted: metrics.Some(p), Significant: sig}}
	}
	res := &analysis.Result{
		Study:    analysis.Study{ID: "s", Name: "s", SourceKind: kind},
		Settings: analysis.Settings{FDRLevel: 0.05},
		Cells:    []analysis.Cell{{CellKey: a, Metrics: cellA}, {CellKey: b, Metrics: cellB}},
		Comparisons: []analysis.Comparison{
			cmp(metrics.QuantityDI, 0.95, 1, 0.0012, true),
			cmp(metrics.QuantityTSS, 0.5, 0.52, 0.61, false),
			cmp(metrics.QuantityAC, 0.6, 0.58, 0.72, false),
			cmp(metrics.QuantityTokens, 2000, 1800, 0.33, false),
		},
		Notes: []string{},
	}
	r := &Report{Kind: KindStudy, Title: "t", Study: "s", Metrics: NewMetricsDocument(res),
		Cells: []CellInfo{{CellKey: a, Components: []string{}}, {CellKey: b, Components: []string{"structured_planning"}}},
		dists: map[analysis.CellKey]dist{a: {tokens: []float64{1900, 2000, 2100}, latency: []float64{1400, 1500, 1600}},
			b: {tokens: []float64{1800}, latency: []float64{1400}}}}
	r.Findings = studyFindings(res, r.Cells)
	r.Notes = boundNotes(res.Cells)
	return r
}

// TestHTMLFoldsNotSignificant: the HTML report shows the significant comparison in the open
// and folds the n.s. ones behind <details> (no script); Markdown keeps every row.
func TestHTMLFoldsNotSignificant(t *testing.T) {
	r := readableReport("harness")
	var h, md bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	open, folded, ok := strings.Cut(page, "<details>")
	if !ok {
		t.Fatalf("report.html has no <details> for the n.s. comparisons")
	}
	folded, _, ok = strings.Cut(folded, "</details>")
	if !ok {
		t.Fatalf("report.html's <details> is not closed")
	}
	if !strings.Contains(folded, "<summary>3 comparisons without a significant difference (n.s.)</summary>") {
		t.Errorf("the fold does not say what it holds:\n%s", folded)
	}
	for _, q := range []string{"<td>tss</td>", "<td>ac</td>", "<td>tokens</td>"} {
		if strings.Contains(open, q) || !strings.Contains(folded, q) {
			t.Errorf("n.s. row %s is not folded", q)
		}
	}
	if !strings.Contains(open, "<td>di</td>") || strings.Contains(folded, "<td>di</td>") {
		t.Errorf("the significant row is not shown in the open")
	}
	if strings.Contains(page, "<script") {
		t.Errorf("report.html has a script")
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(md.String(), "| credit_ecl | sim-steady | harness | harness_sp |"); n != 4 {
		t.Errorf("Markdown has %d comparison rows, want all 4", n)
	}
}

// TestUnknownPrintsDash: a cell of one scored run has no RR, TSS, AC or success interval:
// every rendering prints "—", never 0 or 1.
func TestUnknownPrintsDash(t *testing.T) {
	r := readableReport("harness")
	var summary, tables bytes.Buffer
	if err := WriteMetricsSummary(&summary, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetricsTables(&tables, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	// Fields of the line: success, RR, then DI (one field in the summary, "1.000 ± 0.000" in
	// the tables), TSS, AC.
	for name, tc := range map[string]struct {
		out     string
		tss, ac int
	}{"summary": {summary.String(), 7, 8}, "tables": {tables.String(), 9, 10}} {
		out := tc.out
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "credit_ecl") && strings.Contains(l, "harness_sp") && strings.Fields(l)[3] == "1" {
				line = l
			}
		}
		if f := strings.Fields(line); len(f) <= tc.ac || f[4] != "—" || f[5] != "—" || f[tc.tss] != "—" || f[tc.ac] != "—" {
			t.Errorf("%s: the one-run cell's line is %q, want — for success, RR, TSS and AC", name, line)
		}
	}
	row := r.CellTable().Rows[1]
	for i, col := range r.CellTable().Header {
		if (col == "RR ± SE" || col == "TSS ± SE" || col == "AC ± SE" || col == "success [95% CI]") && row[i] != "—" {
			t.Errorf("cell table %s = %q, want —", col, row[i])
		}
	}
}

// TestIntervalsLeavingTheUnitNoted: RR 0.900 ± 0.080 has the 95% interval [0.743, 1.057]; the
// report's notes, analyzer metrics' tables and summary and the plot's caption say so.
func TestIntervalsLeavingTheUnitNoted(t *testing.T) {
	r := readableReport("harness")
	const want = "RR of credit_ecl · sim-steady · harness, 0.900 ± 0.080, gives [0.743, 1.057]"
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], want) {
		t.Errorf("notes = %q, want one naming %q", r.Notes, want)
	}
	for _, c := range r.Metrics.Cells {
		if c.Condition == "harness" && strings.Contains(strings.Join(boundNotes([]analysis.Cell{c}), ""), "DI of") {
			t.Errorf("DI 0.950 ± 0.020 stays within [0, 1] but is noted")
		}
	}
	var summary, tables bytes.Buffer
	if err := WriteMetricsSummary(&summary, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetricsTables(&tables, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"summary": summary.String(), "tables": tables.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, out)
		}
	}
	figs, err := r.figures()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(figs[0].Caption, "1 of the intervals reach past 0 or 1") {
		t.Errorf("agreement plot caption = %q, want the clipped interval counted", figs[0].Caption)
	}
}

// TestLegendsOffTheData: every figure's legend is drawn in its own column, beside the data
// area and not over it, and the plot itself draws none.
func TestLegendsOffTheData(t *testing.T) {
	r := readableReport("harness")
	figs, err := r.figures()
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) < 5 {
		t.Fatalf("%d figures, want at least 5", len(figs))
	}
	for _, f := range figs {
		w, h := f.size()
		c := draw.New(vgimg.New(w, h))
		plotArea, legendArea := f.layout(c)
		data := f.p.DataCanvas(plotArea).Rectangle
		if s := f.p.Legend.Rectangle(plotArea).Size(); s.X > 0 || s.Y > 0 {
			t.Errorf("%s: the plot draws a legend of its own inside the axes (%v)", f.Title, s)
		}
		legend := f.legend.Rectangle(legendArea)
		if legend.Size().X == 0 {
			t.Errorf("%s: no legend", f.Title)
			continue
		}
		if legendArea.Min.X < data.Max.X {
			t.Errorf("%s: the legend's column starts at x = %v, inside the data area ending at %v", f.Title, legendArea.Min.X, data.Max.X)
		}
		if legend.Size().X > legendArea.Size().X+vg.Points(0.5) || legend.Size().Y > legendArea.Size().Y {
			t.Errorf("%s: legend %v does not fit its column %v", f.Title, legend.Size(), legendArea.Size())
		}
		if _, err := f.render(); err != nil {
			t.Errorf("%s: render: %v", f.Title, err)
		}
	}
}

// TestProductionBasis: a production report does not claim 0 expected runs or 0 rejected
// events where it cannot know: production traffic has no planned count, and the producer's
// receiver refuses bad events before the stream.
func TestProductionBasis(t *testing.T) {
	prod := readableReport("production")
	prod.Basis.RejectedEvents = 0
	rows := map[string]string{}
	for _, row := range prod.BasisTable().Rows {
		rows[row[0]] = row[1]
	}
	if got := rows["runs expected (study definition)"]; !strings.HasPrefix(got, "—") {
		t.Errorf("production runs expected = %q, want —", got)
	}
	if _, ok := rows["rejected events"]; ok {
		t.Errorf("production report says rejected events %q: it cannot know the producer's", rows["rejected events"])
	}
	if got := rows["events the producer refused"]; !strings.HasPrefix(got, "—") {
		t.Errorf("events the producer refused = %q, want —", got)
	}

	study := readableReport("harness")
	n := int64(16)
	study.Basis.ExpectedRuns = &n
	rows = map[string]string{}
	for _, row := range study.BasisTable().Rows {
		rows[row[0]] = row[1]
	}
	if rows["runs expected (study definition)"] != "16" || rows["rejected events"] != "0" {
		t.Errorf("harness study basis = %q, want 16 runs expected and 0 rejected events", rows)
	}
}

// TestReportsSayInputGroups: the cells of production traffic say how many input groups their
// pairwise figures stand on, in the report's cell table, analyzer metrics' tables and summary
// and the findings on RR, DI, TSS and AC; harness cells have no such column.
func TestReportsSayInputGroups(t *testing.T) {
	r := readableReport("production")
	r.Metrics.Cells[0].Metrics.InputGroups = &metrics.InputGroups{Groups: 4, GroupedRuns: 8}
	r.Metrics.Cells[1].Metrics.InputGroups = &metrics.InputGroups{Groups: 0, SingleRuns: 1}
	r.Findings = studyFindings(r.Metrics.Result, r.Cells)
	ct := r.CellTable()
	col := slices.Index(ct.Header, inputGroupsHeader)
	if col < 0 || ct.Rows[0][col] != "4 (8 runs, 0 single)" || ct.Rows[1][col] != "0 (0 runs, 1 single)" {
		t.Errorf("cell table %q, rows %q: want the input groups of each cell", ct.Header, ct.Rows)
	}
	var tables, summary bytes.Buffer
	if err := WriteMetricsTables(&tables, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetricsSummary(&summary, r.Metrics.Result); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"tables": tables.String(), "summary": summary.String()} {
		if !strings.Contains(out, "INPUT GROUPS (RUNS, SINGLE)") || !strings.Contains(out, "4 (8 runs, 0 single)") {
			t.Errorf("%s do not give the input groups:\n%s", name, out)
		}
	}
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Sentence, "(within 4 and 0 input groups)") {
		t.Errorf("findings %+v do not say what they stand on", r.Findings)
	}
	if h := readableReport("harness").CellTable().Header; slices.Contains(h, inputGroupsHeader) {
		t.Errorf("a harness report has the input groups column: %q", h)
	}
}
