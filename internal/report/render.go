package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dittolab/ditto/internal/analysis"
)

// File names Write produces in a report's directory.
const (
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
	FileJSON     = "report.json"
)

// Formats lists the formats Write produces.
var Formats = []string{"md", "html", "json"}

// WriteJSON writes the report as indented JSON followed by a newline (report.json).
func WriteJSON(w io.Writer, r *Report) error { return writeJSON(w, r) }

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func writeMDTable(w io.Writer, t Table) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(mapStrings(t.Header, mdEscape), " | "))
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for i, row := range t.Rows {
		cells := mapStrings(row, mdEscape)
		if t.Flag[i] {
			cells[0] = "**" + cells[0] + "**"
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

// writeMDSkipped lists a section's comparisons that were not made, and why.
func writeMDSkipped(w io.Writer, skips []analysis.SkippedComparison) {
	for _, l := range skippedLines(skips) {
		fmt.Fprintln(w, "- "+mdEscape(l))
	}
	if len(skips) > 0 {
		fmt.Fprintln(w)
	}
}

func mapStrings(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// WriteMarkdown writes the report as Markdown: findings, the tables, the data and the notes.
// The plots are in the HTML report.
func WriteMarkdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n\n", r.Title)
	if r.Metrics != nil && r.Metrics.GeneratedAt != nil {
		fmt.Fprintf(bw, "Data up to %s. Plots: %s beside this file.\n\n", *r.Metrics.GeneratedAt, FileHTML)
	}
	if lines := r.Unscored(); len(lines) > 0 {
		fmt.Fprintln(bw, "## Runs not scored")
		fmt.Fprintln(bw)
		for _, l := range lines {
			fmt.Fprintf(bw, "- %s\n", l)
		}
		fmt.Fprintln(bw)
		if t := r.UnscoredTable(); len(t.Rows) > 0 {
			writeMDTable(bw, t)
		}
	}
	if r.Kind == KindStudy {
		fmt.Fprintln(bw, "## Summary")
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "What each change did, per model, across tasks: ↑k/n significantly higher in k of n tasks, ↓ lower, · no significant difference (Benjamini–Hochberg across the report).")
		fmt.Fprintln(bw)
		writeMDTable(bw, r.SummaryTable())
	}
	fmt.Fprintln(bw, "## Findings")
	fmt.Fprintln(bw)
	if len(r.Findings) == 0 {
		fmt.Fprintln(bw, "No comparison is significant after the Benjamini–Hochberg adjustment.")
	}
	for _, g := range r.FindingGroups() {
		fmt.Fprintf(bw, "### %s\n\n", g.Title)
		for _, fd := range g.Findings {
			mark := ""
			if fd.Bad {
				mark = " **(worse)**"
			}
			if h := heldText(fd); h != "" {
				mark += " " + h
			}
			fmt.Fprintf(bw, "- %s%s\n", fd.Sentence, mark)
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintln(bw)
	if r.Kind == KindStudy {
		fmt.Fprintln(bw, "## Cells")
		fmt.Fprintln(bw)
		writeMDTable(bw, r.CellTable())
		fmt.Fprintln(bw, "## Conditions")
		fmt.Fprintln(bw)
		writeMDTable(bw, r.ConditionTable())
		if r.Coding != nil {
			fmt.Fprintln(bw, "## Coding runs")
			fmt.Fprintln(bw)
			fmt.Fprintln(bw, codingIntro)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.CodingCellTable())
			fmt.Fprintln(bw, codingComparisonIntro)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.CodingComparisonTable())
			writeMDSkipped(bw, r.Coding.Skipped)
		}
		if r.Context != nil {
			fmt.Fprintln(bw, "## Context management")
			fmt.Fprintln(bw)
			fmt.Fprintln(bw, contextIntro)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.ContextTierTable())
			fmt.Fprintln(bw, contextDeterminismIntro)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.ContextDeterminismTable())
			fmt.Fprintln(bw, contextBudgetIntro, contextBudgetPlotNote)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.ContextBudgetTable())
			fmt.Fprintln(bw, contextComparisonIntro)
			fmt.Fprintln(bw)
			writeMDTable(bw, r.ContextComparisonTable())
			writeMDSkipped(bw, r.Context.Skipped)
		}
	} else {
		fmt.Fprintln(bw, "## Windows")
		fmt.Fprintln(bw)
		writeMDTable(bw, r.DriftTable())
	}
	fmt.Fprintln(bw, "## Comparisons")
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "B against the reference A; difference = B − A; q is the Benjamini–Hochberg adjusted p across the report; effect size is Cliff's δ of B against A for Mann–Whitney (positive when B tends to be larger, like B − A).")
	fmt.Fprintln(bw)
	writeMDTable(bw, r.ComparisonTable())
	fmt.Fprintln(bw, "## The data")
	fmt.Fprintln(bw)
	writeMDTable(bw, r.BasisTable())
	if len(r.Notes) > 0 {
		fmt.Fprintln(bw, "## Notes")
		fmt.Fprintln(bw)
		for _, n := range r.Notes {
			fmt.Fprintf(bw, "- %s\n", n)
		}
	}
	return bw.Flush()
}

// FindingGroup is the findings of one task and model.
type FindingGroup struct {
	Title    string
	Findings []Finding
}

// FindingGroups groups the findings by task and model, in report order.
func (r *Report) FindingGroups() []FindingGroup {
	var out []FindingGroup
	for _, f := range r.Findings {
		title := f.Task + " · " + modelText(r.Cells, f.Model)
		if n := len(out); n == 0 || out[n-1].Title != title {
			out = append(out, FindingGroup{Title: title})
		}
		out[len(out)-1].Findings = append(out[len(out)-1].Findings, f)
	}
	return out
}

// ConditionTable lists each condition's harness components as the runs recorded them.
func (r *Report) ConditionTable() Table {
	t := Table{Header: []string{"condition", "harness components"}}
	seen := map[string]bool{}
	for _, c := range r.Cells {
		if seen[c.Condition] {
			continue
		}
		seen[c.Condition] = true
		comps := "none (native tool calling, every tool offered)"
		if len(c.Components) > 0 {
			comps = strings.Join(c.Components, ", ")
		}
		t.Rows = append(t.Rows, []string{c.Condition, comps})
	}
	return t
}

type htmlPlot struct {
	Title, Caption string
	Src            template.URL
}

type htmlData struct {
	R                                                                               *Report
	Cells, Conditions, Drift, Comparisons, NotSignificant, Basis, Summary, Unscored Table
	CodingCells, CodingComparisons                                                  Table
	CodingIntro, CodingComparisonIntro                                              string
	Plots                                                                           []htmlPlot
	GeneratedAt                                                                     string
	HasCells                                                                        bool
	ContextTiers, ContextDeterminism, ContextBudgets, ContextComparisons            Table
	ContextIntro, ContextDetIntro, ContextBudgetIntro, ContextCompIntro             string
	ContextPlots                                                                    []htmlPlot
	CodingSkipped, ContextSkipped                                                   []string
}

// WriteHTML writes the report as one self-contained HTML page: inline CSS, plots as PNG data
// URIs, no script and no external resource.
func WriteHTML(w io.Writer, r *Report) error {
	plots, err := r.Plots()
	if err != nil {
		return err
	}
	ctxPlots, err := r.ContextPlots()
	if err != nil {
		return err
	}
	d := htmlData{R: r, Cells: r.CellTable(), Conditions: r.ConditionTable(), Drift: r.DriftTable(),
		Basis: r.BasisTable(), Summary: r.SummaryTable(), Unscored: r.UnscoredTable(), HasCells: r.Kind == KindStudy,
		ContextTiers: r.ContextTierTable(), ContextDeterminism: r.ContextDeterminismTable(), ContextBudgets: r.ContextBudgetTable(),
		ContextComparisons: r.ContextComparisonTable(), ContextIntro: contextIntro, ContextDetIntro: contextDeterminismIntro,
		ContextBudgetIntro: contextBudgetIntro, ContextCompIntro: contextComparisonIntro,
		CodingCells: r.CodingCellTable(), CodingComparisons: r.CodingComparisonTable(), CodingIntro: codingIntro,
		CodingComparisonIntro: codingComparisonIntro}
	if r.Coding != nil {
		d.CodingSkipped = skippedLines(r.Coding.Skipped)
	}
	if r.Context != nil {
		d.ContextSkipped = skippedLines(r.Context.Skipped)
	}
	d.Comparisons, d.NotSignificant = r.SplitComparisons()
	if r.Metrics != nil && r.Metrics.GeneratedAt != nil {
		d.GeneratedAt = *r.Metrics.GeneratedAt
	}
	d.Plots, d.ContextPlots = htmlPlots(plots), htmlPlots(ctxPlots)
	return pageTemplate.Execute(w, d)
}

func htmlPlots(plots []Plot) []htmlPlot {
	out := make([]htmlPlot, 0, len(plots))
	for _, p := range plots {
		out = append(out, htmlPlot{Title: p.Title, Caption: p.Caption,
			Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(p.PNG))})
	}
	return out
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"held": heldText}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.R.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem;color:#1b1f24;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem} h3{font-size:1rem;margin:.8rem 0 .2rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
.meta{color:#57606a}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:left;vertical-align:top;white-space:nowrap}
th{background:#f6f8fa} tr.bad td{background:#ffebe9}
ul.findings li{margin:.3rem 0} li.bad{color:#a40e26}
figure{margin:1rem 0} figure img{max-width:100%;border:1px solid #d0d7de} figcaption{color:#57606a;font-size:.85rem}
.scroll{overflow-x:auto}
details{margin:.5rem 0} summary{cursor:pointer;color:#57606a}
</style></head><body>
<h1>{{.R.Title}}</h1>
<p class="meta">study <b>{{.R.Study}}</b>{{if .GeneratedAt}} · data up to {{.GeneratedAt}}{{end}} · {{.R.Basis.CountedRuns}} runs counted · {{.R.Basis.Events}} events</p>
{{with .R.Unscored}}<h2>Runs not scored</h2><ul class="unscored">{{range .}}<li>{{.}}</li>{{end}}</ul>
{{if $.Unscored.Rows}}{{template "table" $.Unscored}}{{end}}{{end}}
{{if .HasCells}}<h2>Summary</h2>
<p class="meta">What each change did, per model, across tasks: ↑k/n significantly higher in k of n tasks, ↓ lower, · no significant difference (Benjamini–Hochberg across the report).</p>
{{template "table" .Summary}}{{end}}
<h2>Findings</h2>
{{if .R.Findings}}{{range .R.FindingGroups}}<h3>{{.Title}}</h3><ul class="findings">{{range .Findings}}<li{{if .Bad}} class="bad"{{end}}>{{.Sentence}}{{if .Bad}} <b>(worse)</b>{{end}}{{with held .}} <i>{{.}}</i>{{end}}</li>{{end}}</ul>{{end}}
{{else}}<p>No comparison is significant after the Benjamini–Hochberg adjustment.</p>{{end}}
{{define "table"}}<div class="scroll"><table{{with .ID}} id="{{.}}"{{end}}><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range $i, $row := .Rows}}<tr{{if index $.Flag $i}} class="bad"{{end}}>{{range $row}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
{{if .HasCells}}<h2>Cells</h2>{{template "table" .Cells}}
<h2>Conditions</h2>{{template "table" .Conditions}}
{{if .R.Coding}}<h2>Coding runs</h2><p class="meta">{{.CodingIntro}}</p>{{template "table" .CodingCells}}
<p class="meta">{{.CodingComparisonIntro}}</p>{{template "table" .CodingComparisons}}{{template "skipped" .CodingSkipped}}{{end}}
{{else}}<h2>Windows</h2>{{template "table" .Drift}}{{end}}
{{define "skipped"}}{{if .}}<ul class="skipped">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
{{define "figure"}}<figure><figcaption><b>{{.Title}}</b></figcaption><img alt="{{.Title}}" src="{{.Src}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}
{{range .Plots}}{{template "figure" .}}{{end}}
{{if .R.Context}}<section id="context"><h2>Context management</h2><p class="meta">{{.ContextIntro}}</p>{{template "table" .ContextTiers}}
<p class="meta">{{.ContextDetIntro}}</p>{{template "table" .ContextDeterminism}}
<p class="meta">{{.ContextBudgetIntro}}</p>{{template "table" .ContextBudgets}}
{{range .ContextPlots}}{{template "figure" .}}{{end}}
<p class="meta">{{.ContextCompIntro}}</p>{{template "table" .ContextComparisons}}{{template "skipped" .ContextSkipped}}</section>{{end}}
<h2>Comparisons</h2>
<p class="meta">B against the reference A; difference = B − A; q is the Benjamini–Hochberg adjusted p across the report; effect size is Cliff's δ of B against A for Mann–Whitney (positive when B tends to be larger, like B − A). Rows in red: significant and worse.</p>
{{if .Comparisons.Rows}}{{template "table" .Comparisons}}{{else}}<p>No comparison is significant.</p>{{end}}
{{if .NotSignificant.Rows}}<details><summary>{{len .NotSignificant.Rows}} comparisons without a significant difference (n.s.)</summary>
{{template "table" .NotSignificant}}</details>{{end}}
<h2>The data</h2>{{template "table" .Basis}}
{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))

// Write writes report.md, report.html and report.json into dir (created if missing), each
// through a temporary file renamed into place, so that a reader never sees half a report.
func Write(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, out := range []struct {
		name  string
		write func(io.Writer, *Report) error
	}{{FileJSON, WriteJSON}, {FileMarkdown, WriteMarkdown}, {FileHTML, WriteHTML}} {
		var buf bytes.Buffer
		if err := out.write(&buf, r); err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(dir, out.name), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("report: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
