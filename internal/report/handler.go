package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Handler serves a reports directory (each report in its own subdirectory, as Write writes
// it) under prefix (e.g. "/reports/"): prefix itself is an index page of every report,
// prefix + "<name>/" its HTML report, and prefix + "<name>/report.{html,md,json}" the files.
// Only GET and HEAD are answered, and nothing else in the directory is served.
func Handler(dir, prefix string) http.Handler {
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := strings.Trim(r.URL.Path, "/")
		if p == "" {
			serveIndex(w, dir)
			return
		}
		name, file, _ := strings.Cut(p, "/")
		if file == "" {
			file = FileHTML
		}
		types := map[string]string{FileHTML: "text/html; charset=utf-8", FileMarkdown: "text/markdown; charset=utf-8",
			FileJSON: "application/json"}
		ct, ok := types[file]
		if !ok || !validName(name) {
			http.NotFound(w, r)
			return
		}
		f, st, err := openReportFile(dir, name, file)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", ct)
		http.ServeContent(w, r, file, st.ModTime(), f)
	}))
}

// openReportFile opens file of report name in dir, a regular file in a directory, neither of
// them a symbolic link, and nothing outside dir (os.Root): a link planted in the reports
// directory served whatever it pointed to (/etc/passwd).
func openReportFile(dir, name, file string) (*os.File, os.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	path := filepath.Join(name, file)
	for _, p := range []string{name, path} {
		st, err := root.Lstat(p)
		if err != nil {
			return nil, nil, err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return nil, nil, fmt.Errorf("report: %s is a symbolic link", p)
		}
	}
	f, err := root.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("report: %s is not a regular file", path)
	}
	return f, st, nil
}

// validName accepts a report name as report names are made: a study token, or one followed
// by ".drift" (DriftName).
func validName(s string) bool {
	s = strings.TrimSuffix(s, ".drift")
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// IndexEntry is one report of the index page.
type IndexEntry struct {
	Name, Title, Kind, Study string
	Written                  string
	Findings, Bad            int
}

// Index lists the reports in dir, newest first.
func Index(dir string) []IndexEntry {
	entries, _ := os.ReadDir(dir)
	var out []IndexEntry
	type dated struct {
		e IndexEntry
		t time.Time
	}
	var ds []dated
	for _, e := range entries {
		if !e.IsDir() || !validName(e.Name()) {
			continue
		}
		f, st, err := openReportFile(dir, e.Name(), FileJSON)
		if err != nil {
			continue
		}
		var r Report
		err = json.NewDecoder(f).Decode(&r)
		f.Close()
		if err != nil {
			continue
		}
		ie := IndexEntry{Name: e.Name(), Title: r.Title, Kind: r.Kind, Study: r.Study, Written: st.ModTime().UTC().Format(time.RFC3339), Findings: len(r.Findings)}
		for _, f := range r.Findings {
			if f.Bad {
				ie.Bad++
			}
		}
		ds = append(ds, dated{ie, st.ModTime()})
	}
	slices.SortFunc(ds, func(a, b dated) int {
		if c := b.t.Compare(a.t); c != 0 {
			return c
		}
		return strings.Compare(a.e.Name, b.e.Name)
	})
	for _, d := range ds {
		out = append(out, d.e)
	}
	return out
}

func serveIndex(w http.ResponseWriter, dir string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = indexTemplate.Execute(w, Index(dir))
}

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ditto reports</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left}th{background:#f6f8fa}.bad{color:#a40e26;font-weight:bold}</style>
</head><body><h1>ditto reports</h1>
{{if .}}<table><thead><tr><th>report</th><th>kind</th><th>study</th><th>written (UTC)</th><th>findings</th><th>worse</th><th>files</th></tr></thead><tbody>
{{range .}}<tr><td><a href="{{.Name}}/">{{.Title}}</a></td><td>{{.Kind}}</td><td>{{.Study}}</td><td>{{.Written}}</td><td>{{.Findings}}</td><td{{if .Bad}} class="bad"{{end}}>{{.Bad}}</td>
<td><a href="{{.Name}}/report.html">html</a> · <a href="{{.Name}}/report.md">md</a> · <a href="{{.Name}}/report.json">json</a></td></tr>
{{end}}</tbody></table>{{else}}<p>No report yet.</p>{{end}}
</body></html>
`))
