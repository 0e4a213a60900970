package analysis

import (
	"bytes"
	"os"
	"strings"
	"testing"

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

func validate(t *testing.T, s *jsonschema.Schema, rep *Report) error {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// TestReportValidatesAgainstSchema checks a harness report (empty, one-run and all-failed
// cells, comparisons without p) and a production report against metrics.schema.json, and
// that the schema rejects what it should.
func TestReportValidatesAgainstSchema(t *testing.T) {
	s := compileSchema(t)
	envs, _ := harnessStudy("s1")
	w := ingest(t, append(envs, sampleEnvs(t)...))
	for _, study := range []string{"s1", "sample-prod"} {
		if err := validate(t, s, mustCompute(t, w.DB(), study)); err != nil {
			t.Errorf("report of %s does not validate: %v", study, err)
		}
	}

	rep := mustCompute(t, w.DB(), "s1")
	tests := []struct {
		name   string
		mutate func(r *Report)
	}{
		{"wrong format", func(r *Report) { r.Format = "v0" }},
		{"unknown quantity", func(r *Report) { r.Comparisons[0].Quantity = "vibes" }},
		{"p without p_adjusted", func(r *Report) { r.Comparisons[0].PAdjusted.Valid = false }},
		{"negative count", func(r *Report) { r.Cells[0].Data.Runs = -1 }},
		{"rr above 1", func(r *Report) { r.Cells[0].Metrics.RR.Value.V = 1.5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *rep
			c.Cells = append([]Cell(nil), rep.Cells...)
			c.Comparisons = append([]Comparison(nil), rep.Comparisons...)
			tt.mutate(&c)
			if err := validate(t, s, &c); err == nil {
				t.Errorf("schema accepts a report with %s", tt.name)
			}
		})
	}
}

// TestSchemaNamesEveryField fails when the report gains a field the schema does not describe
// (the schema lists every key of the document's objects).
func TestSchemaNamesEveryField(t *testing.T) {
	b, err := os.ReadFile("metrics.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, mustCompute(t, w.DB(), "s1")); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, `"`) {
			continue
		}
		key, rest, ok := strings.Cut(line[1:], `"`)
		if ok && strings.HasPrefix(rest, ":") && !bytes.Contains(b, []byte(`"`+key+`"`)) {
			t.Errorf("schema does not name the report's key %q", key)
		}
	}
}
