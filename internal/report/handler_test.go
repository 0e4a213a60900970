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
	r := &report.Report{Format: report.FormatV1, Kind: report.KindDrift, Name: "svc.drift", Title: "Drift of svc", Study: "svc",
		Findings: []report.Finding{{Sentence: "RR fell.", Bad: true}}}
	if err := report.Write(filepath.Join(dir, r.Name), r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("no"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Symbolic links planted in the reports directory, to a file and a directory outside it
	// and to a report inside it: none is followed.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(filepath.Join(outside, "elsewhere"), r); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, link string }{
		{filepath.Join(outside, "passwd"), filepath.Join(dir, "planted", report.FileHTML)},
		{filepath.Join(outside, "elsewhere"), filepath.Join(dir, "linkdir")},
		{filepath.Join(dir, r.Name), filepath.Join(dir, "alias")},
	} {
		if err := os.MkdirAll(filepath.Dir(l.link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(report.Handler(dir, "/reports/"))
	defer srv.Close()
	for _, tc := range []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/reports/", 200, "Drift of svc"},
		{"/reports/svc.drift/", 200, "<!DOCTYPE html>"},
		{"/reports/svc.drift/report.json", 200, `"kind": "drift"`},
		{"/reports/svc.drift/report.md", 200, "# Drift of svc"},
		{"/reports/svc.drift/other.txt", 404, ""},
		{"/reports/../secret.txt", 404, ""},
		{"/reports/%2e%2e/secret.txt", 404, ""},
		{"/reports/nope/report.html", 404, ""},
		{"/reports/planted/report.html", 404, ""},
		{"/reports/planted/", 404, ""},
		{"/reports/linkdir/report.json", 404, ""},
		{"/reports/alias/report.json", 404, ""},
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
		if strings.Contains(string(body), "root:x") {
			t.Errorf("GET %s served the file a planted link points to", tc.path)
		}
	}
	if idx := report.Index(dir); len(idx) != 1 || idx[0].Name != r.Name {
		t.Errorf("Index() = %+v, want only %s (no linked report)", idx, r.Name)
	}
}
