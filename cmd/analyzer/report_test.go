package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/report"
)

// TestReportCommand writes a study's report from the database file the demo left behind.
func TestReportCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "demo")
	scale := 0.0
	res, err := demo.Run(ctx, demo.Config{DataDir: dataDir, Fresh: true, Spec: "small", LatencyScale: &scale, Permutations: 100})
	if err != nil {
		t.Fatalf("demo.Run() = %v", err)
	}
	out := filepath.Join(t.TempDir(), "rep")
	var stdout bytes.Buffer
	cfg := reportConfig{out: out}
	cfg.metrics.study = res.Study
	cfg.metrics.target = target{dataDir: dataDir, local: true}
	cfg.metrics.target.resolve()
	cfg.metrics.permutations = 100
	if err := reportCommand(ctx, cfg, &stdout); err != nil {
		t.Fatalf("reportCommand() = %v", err)
	}
	for _, f := range []string{report.FileMarkdown, report.FileHTML, report.FileJSON} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "wrote report.md, report.html and report.json") {
		t.Errorf("output = %q", stdout.String())
	}
	if err := runReport(ctx, flag.NewFlagSet("report", flag.ContinueOnError), []string{"--data-dir", dataDir}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("report without --study = %v, want a usage error", err)
	}
}

// TestWithReports: /reports/ is served beside the API behind the same token; other paths go
// to the API.
func TestWithReports(t *testing.T) {
	dir := t.TempDir()
	r := &report.Report{Format: report.FormatV1, Kind: report.KindStudy, Name: "s1", Title: "Report s1", Study: "s1"}
	if err := report.Write(filepath.Join(dir, "s1"), r); err != nil {
		t.Fatal(err)
	}
	apiHandler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "api") })
	srv := httptest.NewServer(withReports(apiHandler, dir, "sekret"))
	defer srv.Close()
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, token string
		status      int
		body        string
	}{
		{"/reports/", "", 401, "unauthorized"},
		{"/reports/", "wrong", 401, "unauthorized"},
		{"/reports/", "sekret", 200, "Report s1"},
		{"/reports/s1/report.json", "sekret", 200, `"name": "s1"`},
		{"/healthz", "", 200, "api"},
	} {
		if status, body := get(tc.path, tc.token); status != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s (token %q) = %d %.60q, want %d with %q", tc.path, tc.token, status, body, tc.status, tc.body)
		}
	}
}
