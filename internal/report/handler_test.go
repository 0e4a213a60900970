package report_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/report"
)

// TestHandler serves the index and the report files of a reports directory, and nothing else.
func TestHandler(t *testing.T) {
	dir := t.TempDir()
	r := &report.Report{Format: report.FormatV1, Kind: report.KindDrift, Name: "svc-drift", Title: "Drift of svc", Study: "svc",
		Findings: []report.Finding{{Sentence: "RR fell.", Bad: true}}}
	if err := report.Write(filepath.Join(dir, r.Name), r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("no"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(report.Handler(dir, "/reports/"))
	defer srv.Close()
	for _, tc := range []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/reports/", 200, "Drift of svc"},
		{"/reports/svc-drift/", 200, "<!DOCTYPE html>"},
		{"/reports/svc-drift/report.json", 200, `"kind": "drift"`},
		{"/reports/svc-drift/report.md", 200, "# Drift of svc"},
		{"/reports/svc-drift/other.txt", 404, ""},
		{"/reports/../secret.txt", 404, ""},
		{"/reports/%2e%2e/secret.txt", 404, ""},
		{"/reports/nope/report.html", 404, ""},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s = %d %.80q, want %d containing %q", tc.path, resp.StatusCode, body, tc.wantStatus, tc.wantBody)
		}
	}
}
