package report

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
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
	var md, html, js bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Context management", "| m | T0 | 1000 | 2 | 8 | 0.50 | 0.50 |", "| m | T2 | 1000 | 2 | 8 | 0.75 | 0.00 |",
		"success (overflow) at 1000", "| m | T0 | 0.50 (0.50) |", "| m | tier | T0 | T2 | budget 1000 | 8 | 0.50 | 0.75 | 2 | 4 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(html.String(), "<h2>Context management</h2>") || !strings.Contains(js.String(), `"groups"`) {
		t.Error("report.html or report.json lacks the context section")
	}
}
