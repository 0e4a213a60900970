package report

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/metrics"
)

// TestContextSection: a study of context-managed runs gets the context section in every format,
// and its success and overflow per tier equal a recomputation from the runs view.
func TestContextSection(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b, warehousetest.EnvelopeMsgs(t, warehousetest.ContextStudy("ctxr")))
	db := warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond}).DB()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Build(ctx, analysis.SQLQuerier(db), "ctxr", Options{Analysis: analysis.Options{Permutations: 100, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Context == nil || len(r.Context.Groups) != 2 {
		t.Fatalf("context section %+v, want T0 and T2", r.Context)
	}
	rows, err := db.QueryContext(ctx, `SELECT context_tier, count(*) AS runs, count(*) FILTER (WHERE success) AS successes,
		count(*) FILTER (WHERE status = 'overflow') AS overflows FROM runs WHERE study = 'ctxr' GROUP BY ALL ORDER BY context_tier`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var tier string
		var runs, successes, overflows int
		if err := rows.Scan(&tier, &runs, &successes, &overflows); err != nil {
			t.Fatal(err)
		}
		g := r.Context.Groups[i]
		if g.Tier != tier || g.Runs != runs || g.Successes != successes || g.Overflows != overflows {
			t.Errorf("group %s: runs %d, successes %d, overflows %d; the runs view says %d, %d, %d", g.Tier, g.Runs, g.Successes, g.Overflows, runs, successes, overflows)
		}
	}
	md, html, js := renderAll(t, r)
	for _, want := range []string{"## Context management", "| m | T0 | 1000 | 2 | 8 | 0.50 | 0.50 |", "| m | T2 | 1000 | 2 | 8 | 0.75 | 0.00 |",
		"success (overflow) at 1000", "| m | T0 | 0.50 (0.50) |", "| m | tier | T0 | T2 | budget 1000 | 8 | 0.50 | 0.75 | 2 | 4 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(html, "<h2>Context management</h2>") || !strings.Contains(js, `"groups"`) {
		t.Error("report.html or report.json lacks the context section")
	}
	// Determinism per tier: each metric with the cells it rests on. Both cells of each group
	// have four scored runs; their tool calls have no arguments, so AC is undefined in both.
	for _, g := range r.Context.Groups {
		if g.RRCells != 2 || g.DICells != 2 || g.TSSCells != 2 || g.ACCells != 0 || g.AC.Valid {
			t.Errorf("group %s: cells behind RR, DI, TSS, AC = %d, %d, %d, %d (AC %v); want 2, 2, 2 and 0 (AC undefined)",
				g.Tier, g.RRCells, g.DICells, g.TSSCells, g.ACCells, g.AC)
		}
		row := fmt.Sprintf("| m | %s | 1000 | 2 | 8 | %.3f (2) | %.3f (2) | %.3f (2) | — (0) |", g.Tier, g.RR.V, g.DI.V, g.TSS.V)
		if !strings.Contains(md, row) {
			t.Errorf("report.md lacks the determinism row %q", row)
		}
	}
	// The budget curve: one plot for the model, inside the section, after the budget table.
	sec := html[strings.Index(html, `<section id="context">`):]
	budgets, plot := strings.Index(sec, `<table id="context-budgets">`), strings.Index(sec, `<img alt="Budget curves per tier: m" src="data:image/png;base64,`)
	if budgets < 0 || plot < budgets {
		t.Errorf("the context section has the budget table at %d and the budget-curve plot at %d; want the plot after the table", budgets, plot)
	}
	plots, err := r.ContextPlots()
	if err != nil || len(plots) != 1 {
		t.Fatalf("ContextPlots() = %d plots, %v; want one (one model)", len(plots), err)
	}
	img, err := png.Decode(bytes.NewReader(plots[0].PNG))
	if err != nil || img.Bounds().Dx() < 500 {
		t.Errorf("budget-curve plot: %v, size %v", err, img.Bounds())
	}
	if os.Getenv("DITTO_ARTIFACTS") != "" {
		_ = os.WriteFile(filepath.Join(os.Getenv("DITTO_ARTIFACTS"), "budget-curve.png"), plots[0].PNG, 0o644)
	}
}

// TestContextDeterminismUndefined: a tier whose cells define no metric prints "—" with the
// zero cells it rests on, in every format.
func TestContextDeterminismUndefined(t *testing.T) {
	r := &Report{Context: &analysis.Context{Groups: []analysis.ContextGroup{
		{Model: "m", Tier: "T0", Budget: 2000, Cells: 1, Runs: 1, Overflows: 1},
		{Model: "m", Tier: "T4", Budget: 2000, Cells: 2, Runs: 5, Successes: 5, RR: metrics.Some(0.5), RRCells: 1, DI: metrics.Some(0.75), DICells: 1},
	}}}
	tb := r.ContextDeterminismTable()
	want := [][]string{
		{"m", "T0", "2000", "1", "1", "— (0)", "— (0)", "— (0)", "— (0)"},
		{"m", "T4", "2000", "2", "5", "0.500 (1)", "0.750 (1)", "— (0)", "— (0)"},
	}
	if fmt.Sprint(tb.Rows) != fmt.Sprint(want) {
		t.Errorf("ContextDeterminismTable().Rows = %q, want %q", tb.Rows, want)
	}
}

// TestContextSkippedComparisonShown: a user's study with two T2 conditions that differ only in
// the recent window, which pairing does not see, still gets its report; the comparisons those
// two conditions make ambiguous (T2 against T0, planning in T2) are listed with the reason in
// every format, and the comparison that is not ambiguous (planning in T0) is made.
func TestContextSkippedComparisonShown(t *testing.T) {
	envs := warehousetest.ContextStudy("ctxk")
	for _, e := range slices.Clone(envs) {
		if !strings.HasPrefix(e.Run, "c_T2_planfalse-") {
			continue
		}
		c := e
		c.Run = strings.Replace(e.Run, "c_T2_planfalse", "c_T2_recent5_planfalse", 1)
		c.ID = "01CTY" + e.ID[len("01CTX"):]
		switch p := e.Payload.(type) {
		case events.RunStarted:
			p.Condition = "c_T2_recent5_planfalse"
			c.Payload = p
		case events.ContextConfigured:
			p.Recent = 5
			c.Payload = p
		}
		envs = append(envs, c)
	}
	b := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b, warehousetest.EnvelopeMsgs(t, envs))
	db := warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond}).DB()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Build(ctx, analysis.SQLQuerier(db), "ctxk", Options{Analysis: analysis.Options{Permutations: 100, Seed: 1}})
	if err != nil {
		t.Fatalf("Build() = %v, want the report with the ambiguous comparisons skipped", err)
	}
	if r.Context == nil || len(r.Context.Comparisons) != 1 || r.Context.Comparisons[0].Scope != "tier T0" {
		t.Fatalf("context comparisons %+v, want planning in T0 alone", r.Context)
	}
	if len(r.Context.Skipped) != 2 {
		t.Fatalf("skipped %+v, want T2 against T0 and planning in T2", r.Context.Skipped)
	}
	md, html, js := renderAll(t, r)
	for _, want := range []string{
		`m: tier T2 against T0, budget 1000 not compared: conditions "c_T2_planfalse" and "c_T2_recent5_planfalse" switch the same components`,
		`m: planning on against off, tier T2 not compared: conditions "c_T2_planfalse" and "c_T2_recent5_planfalse"`,
		"context limits such as the recent window",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
		if !strings.Contains(html, template.HTMLEscapeString(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if sec := html[strings.Index(html, `<section id="context">`):]; !strings.Contains(sec, `<ul class="skipped"><li>m: tier T2 against T0`) {
		t.Error("report.html does not list the skipped comparisons in the context section")
	}
	if !strings.Contains(js, `"skipped"`) {
		t.Error("report.json lacks the skipped comparisons")
	}
}

// renderAll writes r in the three formats a user reads: Markdown, HTML and JSON.
func renderAll(t *testing.T, r *Report) (md, html, js string) {
	t.Helper()
	var m, h, j bytes.Buffer
	if err := WriteMarkdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	return m.String(), h.String(), j.String()
}
