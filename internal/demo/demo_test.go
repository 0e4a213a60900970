package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/report"
	"go.uber.org/goleak"
)

// TestDemo runs the demo with N = 3 per cell and no simulated latency: the study completes
// (every cell holds its runs), the report is written in its three formats, and the printed
// output has the table and the HTML path.
func TestDemo(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { leaktest.VerifyNone(t, ignore) }) // after every other cleanup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	scale := 0.0
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Config{DataDir: filepath.Join(dir, "demo"), Fresh: true, N: 3, LatencyScale: &scale,
		Concurrency: 16, Permutations: 200, Out: &out})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out.String())
	}
	if res.Runs != 3*2*3*3 {
		t.Errorf("Runs = %d, want 54 (3 tasks × 2 models × 3 conditions × 3)", res.Runs)
	}
	if got := len(res.Report.Metrics.Cells); got != 18 {
		t.Fatalf("report has %d cells, want 18", got)
	}
	for _, c := range res.Report.Metrics.Cells {
		if c.Metrics.N != 3 || c.Data.IncompleteRuns != 0 {
			t.Errorf("cell %s: N = %d, incomplete %d; want 3 and 0", c.CellKey, c.Metrics.N, c.Data.IncompleteRuns)
		}
	}
	for _, f := range []string{report.FileHTML, report.FileMarkdown, report.FileJSON} {
		st, err := os.Stat(filepath.Join(res.Dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %d)", f, err, st.Size())
		}
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, report.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format string `json:"format"`
		Basis  struct {
			CountedRuns int64 `json:"counted_runs"`
			Models      []struct {
				Name      string `json:"name"`
				Simulated bool   `json:"simulated"`
			} `json:"models"`
		} `json:"basis"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != report.FormatV1 || doc.Basis.CountedRuns != 54 || len(doc.Basis.Models) != 2 || !doc.Basis.Models[0].Simulated {
		t.Errorf("report.json: format %q, counted runs %d, models %+v; want %s, 54, two simulated models", doc.Format, doc.Basis.CountedRuns, doc.Basis.Models, report.FormatV1)
	}
	for _, want := range []string{"TASK", "credit_ecl", "aml_screening", "renal_dosing", "HTML report: " + filepath.Join(dir, "demo", "reports")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
