package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

func TestNumberFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"num", num(metrics.Some(0.41234), 3), "0.412"},
		{"num whole", num(metrics.Some(2699.6), 0), "2700"},
		{"num null", num(metrics.Null, 2), "—"},
		{"p", pValue(metrics.Some(0.03)), "0.0300"},
		{"p one", pValue(metrics.Some(1)), "1.0000"},
		{"p at the switch", pValue(metrics.Some(0.0001)), "0.0001"},
		{"p tiny", pValue(metrics.Some(0.0000412)), "4.1e-05"},
		{"p zero", pValue(metrics.Some(0)), "0.0000"},
		{"p null", pValue(metrics.Null), "—"},
		{"p estimated", pEstimated(metrics.Comparison{P: metrics.Some(0.0123), PSE: metrics.Some(0.00112)}), "0.0123 ± 0.0011"},
		{"p exact", pEstimated(metrics.Comparison{P: metrics.Some(0.0123)}), "0.0123"},
		{"p null with SE", pEstimated(metrics.Comparison{PSE: metrics.Some(0.01)}), "—"},
		{"estimate", estimate(metrics.Estimate{Value: metrics.Some(0.5), SE: metrics.Some(0.0412)}), "0.500 ± 0.041"},
		{"estimate sampled", estimate(metrics.Estimate{Value: metrics.Some(0.5), SE: metrics.Some(0.01), Estimated: true}), "~0.500 ± 0.010"},
		{"estimate without SE", estimate(metrics.Estimate{Value: metrics.Some(1)}), "1.000"},
		{"estimate null", estimate(metrics.Estimate{SE: metrics.Some(0.1)}), "—"},
		{"success", success(metrics.Success{Rate: metrics.Some(0.9), WilsonLow: metrics.Some(0.6), WilsonHi: metrics.Some(0.98)}, 2), "0.90 [0.60, 0.98]"},
		{"success null", success(metrics.Success{}, 2), "—"},
		{"setting", setting(0.05), "0.05"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	for _, tc := range []struct {
		a, b   metrics.Value
		want   string
		wantOK bool
	}{
		{metrics.Some(1000), metrics.Some(1120), "+12%", true},
		{metrics.Some(3000), metrics.Some(2700), "-10%", true},
		{metrics.Some(0), metrics.Some(1), "", false},
		{metrics.Null, metrics.Some(1), "", false},
	} {
		if got, ok := percentChange(tc.a, tc.b); got != tc.want || ok != tc.wantOK {
			t.Errorf("percentChange(%v, %v) = %q, %v; want %q, %v", tc.a, tc.b, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestOnePValueEverywhere: a comparison's p and q, and a cell's estimate, print the same in
// the tables of `analyzer metrics`, the report's comparison and cell tables, its Markdown and
// its findings' sentences.
func TestOnePValueEverywhere(t *testing.T) {
	key := analysis.CellKey{Task: "credit_ecl", Model: "sim-steady", Condition: "harness_sp"}
	rr := metrics.Estimate{Value: metrics.Some(0.41234), SE: metrics.Some(0.0312)}
	res := &analysis.Result{
		Study: analysis.Study{ID: "s", Name: "s", SourceKind: "harness"},
		Cells: []analysis.Cell{{CellKey: key, Metrics: metrics.CellMetrics{N: 10, RR: rr}}},
		Comparisons: []analysis.Comparison{{Task: key.Task, Model: key.Model, ConditionA: "harness", ConditionB: "harness_sp",
			Comparison: metrics.Comparison{Quantity: metrics.QuantityRR, Test: "permutation", ValueA: metrics.Some(0.2), ValueB: metrics.Some(0.41234),
				Difference: metrics.Some(0.21234), P: metrics.Some(0.0000123), PAdjusted: metrics.Some(0.0000456), Significant: true}}},
		Notes: []string{},
	}
	r := &Report{Kind: KindStudy, Title: "t", Metrics: NewMetricsDocument(res), Cells: []CellInfo{{CellKey: key}}}
	r.Findings = studyFindings(res, r.Cells)

	var tables, md bytes.Buffer
	if err := WriteMetricsTables(&tables, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	var cmpRows, cellRows strings.Builder
	for _, row := range r.ComparisonTable().Rows {
		cmpRows.WriteString(strings.Join(row, "|"))
	}
	for _, row := range r.CellTable().Rows {
		cellRows.WriteString(strings.Join(row, "|"))
	}
	if len(r.Findings) != 1 {
		t.Fatalf("%d findings, want 1", len(r.Findings))
	}
	for _, out := range []struct {
		name, text string
		want       []string
	}{
		{"metrics tables", tables.String(), []string{"1.2e-05", "4.6e-05", "0.412 ± 0.031"}},
		{"comparison table", cmpRows.String(), []string{"1.2e-05", "4.6e-05"}},
		{"cell table", cellRows.String(), []string{"0.412 ± 0.031"}},
		{"markdown", md.String(), []string{"1.2e-05", "4.6e-05", "0.412 ± 0.031", "q = 4.6e-05"}},
		{"finding", r.Findings[0].Sentence, []string{"q = 4.6e-05"}},
	} {
		for _, w := range out.want {
			if !strings.Contains(out.text, w) {
				t.Errorf("%s lacks %q:\n%s", out.name, w, out.text)
			}
		}
		for _, other := range []string{"1.23e-05", "4.56e-05", "0.412±", "q < "} {
			if strings.Contains(out.text, other) {
				t.Errorf("%s prints %q, another form of the same number:\n%s", out.name, other, out.text)
			}
		}
	}
}
