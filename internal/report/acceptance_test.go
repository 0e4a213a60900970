package report_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/browsertest"
	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/warehouse"
	_ "github.com/duckdb/duckdb-go/v2"
)

// fixture is one small research study run end to end (embedded NATS, simulated models,
// worker, ingestion) and its report, shared by the acceptance tests of this file.
type fixture struct {
	dataDir string
	res     *demo.Result
	err     error
}

var (
	fixOnce sync.Once
	fix     fixture
	fixRoot string
)

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "report-acceptance-")
	if err != nil {
		panic(err)
	}
	fixRoot = root
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

func studyFixture(t *testing.T) fixture {
	t.Helper()
	fixOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		scale := 0.0
		fix.dataDir = filepath.Join(fixRoot, "demo")
		fix.res, fix.err = demo.Run(ctx, demo.Config{DataDir: fix.dataDir, Fresh: true, N: 8, LatencyScale: &scale,
			Concurrency: 16, Permutations: 300})
	})
	if fix.err != nil {
		t.Fatalf("demo.Run() = %v", fix.err)
	}
	return fix
}

func readReportJSON(t *testing.T, dir string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	return &r
}

// recomputeSQL recomputes, from the exported Parquet of run_folds only and with DuckDB SQL
// only (no package metrics, no stored signature), what a report states per cell. The counted
// run is each run's latest finished attempt; traces are grouped by their contents.
const recomputeSQL = `
WITH folds AS (
    SELECT * FROM read_parquet('%[1]s/run_folds/*/*.parquet', hive_partitioning = true) WHERE study = '%[2]s'
), counted AS (
    SELECT * FROM folds f
    WHERE attempt = (SELECT max(attempt) FROM folds g WHERE g.run = f.run)
), agree AS (
    SELECT task, model, condition, kind, sum(n * (n - 1)) AS same_pairs
    FROM (
        SELECT task, model, condition, 'trace' AS kind, count(*) AS n FROM counted GROUP BY task, model, condition, plan, states, calls, output
        UNION ALL SELECT task, model, condition, 'tools', count(*) FROM counted GROUP BY task, model, condition, tools
        UNION ALL SELECT task, model, condition, 'states', count(*) FROM counted GROUP BY task, model, condition, states
        UNION ALL SELECT task, model, condition, 'output', count(*) FROM counted GROUP BY task, model, condition, output
        UNION ALL SELECT task, model, condition, 'plan', count(*) FROM counted GROUP BY task, model, condition, plan
    )
    GROUP BY ALL
), cells AS (
    SELECT task, model, condition,
           count(*) AS n,
           count(*) FILTER (WHERE success AND status NOT IN ('escalated', 'aborted')) AS successes,
           avg(tokens) AS mean_tokens,
           quantile_cont(tokens, 0.5) AS median_tokens,
           avg(coalesce(latency_ms, elapsed_ms)) AS mean_latency,
           quantile_cont(coalesce(latency_ms, elapsed_ms), 0.5) AS median_latency,
           avg(retries) AS retries_per_run,
           avg(CASE WHEN escalated OR status = 'escalated' THEN 1 ELSE 0 END) AS escalations_per_run,
           count(DISTINCT output) AS distinct_outputs
    FROM counted
    GROUP BY ALL
)
SELECT c.task, c.model, c.condition, c.n, c.successes, c.successes / c.n AS success_rate,
       c.mean_tokens, c.median_tokens, c.mean_latency, c.median_latency, c.retries_per_run, c.escalations_per_run, c.distinct_outputs,
       max(a.same_pairs) FILTER (WHERE kind = 'trace') / (c.n * (c.n - 1)) AS rr,
       (max(a.same_pairs) FILTER (WHERE kind = 'tools') + max(a.same_pairs) FILTER (WHERE kind = 'states')
        + max(a.same_pairs) FILTER (WHERE kind = 'output')) / (3.0 * c.n * (c.n - 1)) AS di,
       max(a.same_pairs) FILTER (WHERE kind = 'plan') / (c.n * (c.n - 1)) AS plan_agreement
FROM cells c JOIN agree a USING (task, model, condition)
GROUP BY c.task, c.model, c.condition, c.n, c.successes, c.mean_tokens, c.median_tokens, c.mean_latency, c.median_latency,
         c.retries_per_run, c.escalations_per_run, c.distinct_outputs
ORDER BY c.task, c.model, c.condition`

// TestReportMatchesParquet: every per-cell number of report.json equals its recomputation
// from the analyzer's Parquet export with DuckDB SQL alone.
func TestReportMatchesParquet(t *testing.T) {
	fx := studyFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: warehouse.DefaultPath(fx.dataDir), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	exportDir := t.TempDir()
	if _, err := queryapi.Export(ctx, w.DB(), exportDir, warehouse.Tables()); err != nil {
		w.Close()
		t.Fatalf("api.Export() = %v", err)
	}
	w.Close()

	got := readReportJSON(t, fx.res.Dir)
	byCell := map[analysis.CellKey]analysis.Cell{}
	for _, c := range got.Metrics.Cells {
		byCell[c.CellKey] = c
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, fmt.Sprintf(recomputeSQL, exportDir, fx.res.Study))
	if err != nil {
		t.Fatalf("recompute: %v", err)
	}
	defer rows.Close()
	cells := 0
	for rows.Next() {
		var k analysis.CellKey
		var n, successes, distinct int64
		var rate, meanTok, medTok, meanLat, medLat, retries, esc, rr, di, plan float64
		if err := rows.Scan(&k.Task, &k.Model, &k.Condition, &n, &successes, &rate, &meanTok, &medTok, &meanLat, &medLat,
			&retries, &esc, &distinct, &rr, &di, &plan); err != nil {
			t.Fatal(err)
		}
		cells++
		c, ok := byCell[k]
		if !ok {
			t.Errorf("cell %s is in the Parquet but not in report.json", k)
			continue
		}
		m := c.Metrics
		for _, chk := range []struct {
			name      string
			got, want float64
		}{
			{"N", float64(m.N), float64(n)},
			{"successes", float64(m.Success.Successes), float64(successes)},
			{"success rate", m.Success.Rate.V, rate},
			{"mean tokens", m.Tokens.Mean.V, meanTok},
			{"median tokens", m.Tokens.Median.V, medTok},
			{"mean latency", m.Latency.Mean.V, meanLat},
			{"median latency", m.Latency.Median.V, medLat},
			{"retries per run", m.Harness.RetriesPerRun.V, retries},
			{"escalations per run", m.Harness.EscalationsPerRun.V, esc},
			{"distinct outputs", float64(m.DistinctOutputs), float64(distinct)},
			{"RR", m.RR.Value.V, rr},
			{"DI", m.DI.Value.V, di},
			{"plan agreement", m.PlanAgree.Value.V, plan},
		} {
			if math.Abs(chk.got-chk.want) > 1e-9*math.Max(1, math.Abs(chk.want)) {
				t.Errorf("%s: report.json %s = %v, Parquet recomputation %v", k, chk.name, chk.got, chk.want)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if cells != len(got.Metrics.Cells) || cells != 18 {
		t.Errorf("recomputed %d cells, report.json has %d, want 18", cells, len(got.Metrics.Cells))
	}
	if got.Basis.CountedRuns != 18*8 {
		t.Errorf("basis counted runs = %d, want %d", got.Basis.CountedRuns, 18*8)
	}
}

// TestHTMLRendersInChromium renders report.html in headless Chromium (Debian's chromium) to
// a PNG and checks that the picture is large and far from blank. Without chromium the test
// skips, except under CI (CI set), where it fails: CI installs chromium.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	fx := studyFixture(t)
	html := filepath.Join(fx.res.Dir, report.FileHTML)
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://", "<script", "ZgotmplZ"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("report.html contains %q: it must be self-contained and have no unsafe URL", bad)
		}
	}
	if n := strings.Count(string(b), `src="data:image/png;base64,`); n < 5 {
		t.Errorf("report.html has %d inline PNG plots, want at least 5", n)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1400,2400", "file://"+html)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr.String())
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	bounds := img.Bounds()
	if bounds.Dx() < 1000 || bounds.Dy() < 2000 {
		t.Errorf("screenshot is %v, want about 1400×2400", bounds)
	}
	// Non-trivial: many distinct colours (text, tables, plots) and a good share of non-white
	// pixels, sampled on a grid.
	colors := map[[3]uint32]bool{}
	nonWhite, samples := 0, 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			samples++
			if r>>8 < 240 || g>>8 < 240 || b>>8 < 240 {
				nonWhite++
			}
		}
	}
	if len(colors) < 50 || float64(nonWhite)/float64(samples) < 0.03 {
		t.Errorf("screenshot looks blank: %d colours, %.1f%% non-white pixels", len(colors), 100*float64(nonWhite)/float64(samples))
	}
	t.Logf("screenshot %v: %d colours, %.1f%% non-white", bounds, len(colors), 100*float64(nonWhite)/float64(samples))
}
