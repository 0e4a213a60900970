package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("metrics.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("metrics.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("metrics.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("metrics.schema.json")
	if err != nil {
		t.Fatalf("compile metrics.schema.json: %v", err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, doc []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

func metricsJSON(t *testing.T, r *analysis.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteMetricsJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// schemaResults are the analyses the schema tests render: s1 of the golden database (a
// superseded attempt, a run still running, a one-run real-model cell, comparisons without p),
// the production samples (releases, every test with a p) and a research study run end to end.
func schemaResults(t *testing.T) map[string]*analysis.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := reportGoldenDB(t)
	out := map[string]*analysis.Result{"research": studyFixture(t).res.Report.Metrics.Result}
	for _, study := range []string{"s1", "sample-prod"} {
		r, err := analysis.Compute(ctx, db, study, analysis.Options{Permutations: 200, Seed: 42})
		if err != nil {
			t.Fatalf("Compute(%s) = %v", study, err)
		}
		out[study] = r
	}
	return out
}

// TestMetricsDocumentValidates checks the metrics documents WriteMetricsJSON writes against
// metrics.schema.json, and that the schema rejects what it should.
func TestMetricsDocumentValidates(t *testing.T) {
	s := compileSchema(t)
	results := schemaResults(t)
	for name, r := range results {
		if err := validate(t, s, metricsJSON(t, r)); err != nil {
			t.Errorf("metrics document of %s does not validate: %v", name, err)
		}
	}

	prod := results["sample-prod"]
	tests := []struct {
		name   string
		mutate func(d *report.MetricsDocument)
	}{
		{"wrong format", func(d *report.MetricsDocument) { d.Format = "v0" }},
		{"unknown quantity", func(d *report.MetricsDocument) { d.Comparisons[0].Quantity = "vibes" }},
		{"p without p_adjusted", func(d *report.MetricsDocument) { d.Comparisons[0].PAdjusted.Valid = false }},
		{"negative count", func(d *report.MetricsDocument) { d.Cells[0].Data.Runs = -1 }},
		{"rr above 1", func(d *report.MetricsDocument) { d.Cells[0].Metrics.RR.Value.V = 1.5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *prod
			c.Cells = append([]analysis.Cell(nil), prod.Cells...)
			c.Comparisons = append([]analysis.Comparison(nil), prod.Comparisons...)
			d := report.NewMetricsDocument(&c)
			tt.mutate(d)
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := validate(t, s, b); err == nil {
				t.Errorf("schema accepts a document with %s", tt.name)
			}
		})
	}
}

// TestSchemaNamesEveryField fails when the document gains a field the schema does not
// describe (the schema lists every key of the document's objects).
func TestSchemaNamesEveryField(t *testing.T) {
	b, err := os.ReadFile("metrics.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range schemaResults(t) {
		for _, line := range strings.Split(string(metricsJSON(t, r)), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, `"`) {
				continue
			}
			key, rest, ok := strings.Cut(line[1:], `"`)
			if ok && strings.HasPrefix(rest, ":") && !bytes.Contains(b, []byte(`"`+key+`"`)) {
				t.Errorf("schema does not name the key %q of the document of %s", key, name)
			}
		}
	}
}

// TestMetricsDocumentRoundTrip: the document decodes into a MetricsDocument and encodes to the
// same bytes, and is the "metrics" of report.json.
func TestMetricsDocumentRoundTrip(t *testing.T) {
	fx := studyFixture(t)
	want := metricsJSON(t, fx.res.Report.Metrics.Result)
	var d report.MetricsDocument
	if err := json.Unmarshal(want, &d); err != nil {
		t.Fatal(err)
	}
	if d.Format != report.MetricsFormatV1 || d.Result == nil {
		t.Fatalf("decoded document: format %q, result %v", d.Format, d.Result)
	}
	if got := metricsJSON(t, d.Result); !bytes.Equal(got, want) {
		t.Errorf("document does not survive a round trip:\n%s\n---\n%s", got, want)
	}
	rj := readReportJSON(t, fx.res.Dir)
	if rj.Metrics == nil || rj.Metrics.Format != report.MetricsFormatV1 || len(rj.Metrics.Cells) != len(d.Cells) {
		t.Errorf("report.json's metrics = %+v, want the document (%d cells)", rj.Metrics, len(d.Cells))
	}
}
