package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/samples"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
	"github.com/dittolab/ditto/internal/warehouse"
)

// metricsDB ingests the bundled production traces (study sample-prod) into a database file
// through nats-server and the warehouse, and closes it.
func metricsDB(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := bustest.NewServer(t).Connect(t)
	publishLines(t, b, string(samples.Traces))
	path := filepath.Join(t.TempDir(), warehouse.DefaultFile)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CatchUp(ctx, b, warehouse.IngestConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func metricsCfg(t *testing.T, dbPath string, args ...string) metricsConfig {
	t.Helper()
	fs := flagSetFor(t)
	var cfg metricsConfig
	cfg.registerFlags(fs)
	if err := fs.Parse(append([]string{"--db", dbPath, "--data-dir", filepath.Dir(dbPath), "--permutations", "300"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.validate(fs); err != nil {
		t.Fatal(err)
	}
	cfg.target.resolve()
	return cfg
}

func TestMetricsCommand(t *testing.T) {
	path := metricsDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Local: computed, stored, written to --out; twice gives the same bytes.
	out := filepath.Join(t.TempDir(), "report.json")
	var stderr bytes.Buffer
	cfg := metricsCfg(t, path, "--study", "sample-prod", "--json", "--out", out)
	if err := metricsCommand(ctx, cfg, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatalf("metrics = %v", err)
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.MetricsDocument
	if err := json.Unmarshal(first, &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.Result == nil {
		t.Fatalf("report has no result:\n%s", first)
	}
	if rep.Format != report.MetricsFormatV1 || len(rep.Cells) != 2 || len(rep.Comparisons) != 7 {
		t.Errorf("report has format %q, %d cells, %d comparisons; want %q, 2, 7", rep.Format, len(rep.Cells), len(rep.Comparisons), report.MetricsFormatV1)
	}
	if err := metricsCommand(ctx, cfg, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(out); !bytes.Equal(first, second) {
		t.Error("two runs over the same events wrote different reports")
	}
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	var nm, nc int
	if err := db.QueryRow("SELECT (SELECT count(*) FROM metrics WHERE study = 'sample-prod'), (SELECT count(*) FROM comparisons WHERE study = 'sample-prod')").Scan(&nm, &nc); err != nil {
		t.Fatal(err)
	}
	if nm == 0 || nc != 7 {
		t.Errorf("stored %d metrics rows and %d comparisons, want some and 7", nm, nc)
	}

	db.Close()

	// Tables for people.
	var tables bytes.Buffer
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "sample-prod"), &tables, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"invoice_triage", "r1", "r2", "fisher_exact", "mann_whitney_u", "P BH"} {
		if !strings.Contains(tables.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, tables.String())
		}
	}

	// The summary: a line per cell, the significant comparisons only, the others counted.
	var summary bytes.Buffer
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "sample-prod", "--summary"), &summary, &stderr); err != nil {
		t.Fatal(err)
	}
	checkSummary(t, summary.String(), &rep)
	t.Logf("analyzer metrics --summary:\n%s", summary.String())

	// Errors: an unknown study, a missing database.
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "nope"), &tables, &stderr); !errors.Is(err, analysis.ErrNoStudy) {
		t.Errorf("unknown study = %v, want ErrNoStudy", err)
	}
	missing := filepath.Join(t.TempDir(), "none.duckdb")
	if err := metricsCommand(ctx, metricsCfg(t, missing, "--study", "x"), &tables, &stderr); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("missing database = %v, want a no-database error", err)
	}
}

// TestMetricsThroughServe runs analyzer metrics while analyzer serve holds the database and
// the study's events are still arriving: serve commits a batch only 10 s after its first event,
// so ingestion is behind when the command asks. The command says so and waits, the serving
// analyzer computes the same report as the file gives and stores it (FROM metrics answers);
// with --no-wait the command says how far behind ingestion is and computes on what is stored.
func TestMetricsThroughServe(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	path := metricsDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var local bytes.Buffer
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "sample-prod", "--json", "--store=false"), &local, io.Discard); err != nil {
		t.Fatal(err)
	}

	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	dataDir := t.TempDir()
	const token = "metrics-token"
	cfg := serveConfigFor(srv.ClientURL(), dataDir, token)
	cfg.ingest.BatchWait = 10 * time.Second
	c := startServe(t, cfg).client
	viaServe := func(args ...string) metricsConfig {
		cfg := metricsCfg(t, filepath.Join(dataDir, warehouse.DefaultFile), args...)
		cfg.target.token = token
		return cfg
	}

	// The whole study arrives just now: the command waits for it instead of "no such study".
	publishLines(t, b, string(samples.Traces))
	var remote, stderr bytes.Buffer
	if err := metricsCommand(ctx, viaServe("--study", "sample-prod", "--json"), &remote, &stderr); err != nil {
		t.Fatalf("metrics through serve = %v\n%s", err, stderr.String())
	}
	if !regexp.MustCompile(`ingestion is [1-9][0-9]* events behind; waiting`).MatchString(stderr.String()) {
		t.Errorf("stderr = %q, want the waiting notice", stderr.String())
	}
	if !bytes.Equal(remote.Bytes(), local.Bytes()) {
		t.Errorf("report through serve differs from the one computed on the file:\n%s\nwant\n%s", remote.String(), local.String())
	}
	if !strings.Contains(stderr.String(), "stored by the serving analyzer") {
		t.Errorf("stderr = %q, want the stored notice", stderr.String())
	}
	tab, err := c.Query(ctx, queryapi.SQLRequest{SQL: "SELECT (SELECT count(*) FROM metrics WHERE study = 'sample-prod'), (SELECT count(*) FROM comparisons WHERE study = 'sample-prod')"})
	if err != nil {
		t.Fatal(err)
	}
	if nm, nc := fmt.Sprint(tab.Rows[0][0]), fmt.Sprint(tab.Rows[0][1]); nm == "0" || nc != "7" {
		t.Errorf("stored through serve: %s metrics rows and %s comparisons, want some and 7", nm, nc)
	}

	// Another study arrives: --no-wait says how far behind ingestion is and does not wait
	// (the study is not stored yet); without it, the command waits and finds it.
	publishLines(t, b, serveTestLines(t))
	stderr.Reset()
	err = metricsCommand(ctx, viaServe("--study", "beta", "--no-wait"), io.Discard, &stderr)
	if !errors.Is(err, analysis.ErrNoStudy) {
		t.Errorf("--no-wait before ingestion = %v, want ErrNoStudy", err)
	}
	if !regexp.MustCompile(`ingestion is [1-9][0-9]* events behind; not waiting`).MatchString(stderr.String()) {
		t.Errorf("--no-wait stderr = %q, want the behind notice", stderr.String())
	}
	var tables bytes.Buffer
	stderr.Reset()
	if err := metricsCommand(ctx, viaServe("--study", "beta"), &tables, &stderr); err != nil {
		t.Fatalf("metrics --study beta through serve = %v\n%s", err, stderr.String())
	}
	if !strings.Contains(tables.String(), "study beta (Study beta") {
		t.Errorf("tables of beta:\n%s", tables.String())
	}
	// The summary through serve is the summary of the file.
	var remoteSummary, localSummary bytes.Buffer
	if err := metricsCommand(ctx, viaServe("--study", "sample-prod", "--summary", "--store=false"), &remoteSummary, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "sample-prod", "--summary", "--store=false"), &localSummary, io.Discard); err != nil {
		t.Fatal(err)
	}
	if remoteSummary.String() != localSummary.String() {
		t.Errorf("summary through serve:\n%s\nwant the file's:\n%s", remoteSummary.String(), localSummary.String())
	}
	// A request body is one JSON object: anything after it is a bad request, not ignored.
	code, body := bearerDo(t, http.MethodPost, c.BaseURL+MetricsPath, token, `{"study":"sample-prod"} {"study":"nope"}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "trailing data") {
		t.Errorf("POST %s with trailing data: %d %s, want 400 naming it", MetricsPath, code, body)
	}
	// An unknown study, ingestion caught up: no such study.
	if err := metricsCommand(ctx, viaServe("--study", "nope"), io.Discard, io.Discard); !errors.Is(err, analysis.ErrNoStudy) {
		t.Errorf("unknown study through serve = %v, want ErrNoStudy", err)
	}
}

func TestMetricsUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--study", "s", "extra"},
		{"--study", "s", "--permutations", "0"},
		{"--study", "s", "--pairs", "baseline"},
		{"--study", "s", "--pairs", "*:x"},
		{"--study", "s", "--json", "--summary"},
	} {
		if err := runMetrics(context.Background(), flagSetFor(t), args); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("metrics %q = %v, want ErrUsage", args, err)
		}
	}
}

func flagSetFor(t *testing.T) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	return fs
}

// checkSummary: analyzer metrics --summary prints one line per cell, every significant
// comparison and no other, and says how many it left out.
func checkSummary(t *testing.T, out string, doc *report.MetricsDocument) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, c := range doc.Cells {
		n := 0
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 3 && f[0] == c.Task && f[1] == c.Model && f[2] == c.Condition && f[3] == fmt.Sprint(c.Metrics.N) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("summary has %d lines for cell %s, want 1:\n%s", n, c.CellKey, out)
		}
	}
	sig := 0
	for _, c := range doc.Comparisons {
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c.Task) + ` +` + regexp.QuoteMeta(c.Model) + ` +` + regexp.QuoteMeta(c.ConditionA) +
			` +` + regexp.QuoteMeta(c.ConditionB) + ` +` + regexp.QuoteMeta(c.Quantity) + ` `)
		listed := row.MatchString(out)
		if c.Significant {
			sig++
		}
		if listed != c.Significant {
			t.Errorf("comparison %s %s→%s %s (significant %v) listed %v in the summary:\n%s", c.Task, c.ConditionA, c.ConditionB, c.Quantity, c.Significant, listed, out)
		}
	}
	head := fmt.Sprintf("%d of %d comparisons significant", sig, len(doc.Comparisons))
	if !strings.Contains(out, head) {
		t.Errorf("summary lacks %q:\n%s", head, out)
	}
	if rest := len(doc.Comparisons) - sig; rest > 0 && !strings.Contains(out, fmt.Sprintf("the other %d are not listed", rest)) {
		t.Errorf("summary does not count the %d comparisons it leaves out:\n%s", rest, out)
	}
	if strings.Contains(out, "n.s.") {
		t.Errorf("summary lists an n.s. comparison:\n%s", out)
	}
}
