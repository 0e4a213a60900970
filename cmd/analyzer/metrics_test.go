package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/samples"
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

	// Through a serving analyzer's API (the file held by it): the same report, not stored.
	srv, err := queryapi.NewServer(db, queryapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var remote bytes.Buffer
	stderr.Reset()
	cfg = metricsCfg(t, path, "--study", "sample-prod", "--json", "--url", hs.URL)
	if err := metricsCommand(ctx, cfg, &remote, &stderr); err != nil {
		t.Fatalf("metrics through the API = %v", err)
	}
	if !bytes.Equal(remote.Bytes(), first) {
		t.Errorf("report through the API differs from the local one")
	}
	if !strings.Contains(stderr.String(), "NOT stored") {
		t.Errorf("stderr = %q, want the not-stored notice", stderr.String())
	}
	hs.Close()
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

	// Errors: an unknown study, a missing database.
	if err := metricsCommand(ctx, metricsCfg(t, path, "--study", "nope"), &tables, &stderr); !errors.Is(err, analysis.ErrNoStudy) {
		t.Errorf("unknown study = %v, want ErrNoStudy", err)
	}
	missing := filepath.Join(t.TempDir(), "none.duckdb")
	if err := metricsCommand(ctx, metricsCfg(t, missing, "--study", "x"), &tables, &stderr); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("missing database = %v, want a no-database error", err)
	}
}

func TestMetricsUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--study", "s", "extra"},
		{"--study", "s", "--permutations", "0"},
		{"--study", "s", "--pairs", "baseline"},
		{"--study", "s", "--pairs", "*:x"},
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
