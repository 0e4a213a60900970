package report

import (
	"encoding/json"
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
		f, err := os.Open(filepath.Join(dir, name, file))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ct)
		http.ServeContent(w, r, file, st.ModTime(), f)
	}))
}

// validName accepts a report name as report names are made (study tokens, "-drift").
func validName(s string) bool {
	if s == "" || s == "." || s == ".." {
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
		path := filepath.Join(dir, e.Name(), FileJSON)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r Report
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		st, _ := os.Stat(path)
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
