package report_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/browsertest"
	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/metrics"
	"gonum.org/v1/gonum/stat/distuv"
)

// ctxFix is builtin:coding itself — the shipped spec as `analyzer demo --spec coding` and
// `producer study submit builtin:coding` load it, not a copy: tiers T0–T4 × two budgets ×
// planning on and off × file tools and bash × two simulated personas, N = 2 per cell, 160 runs
// — run end to end on the embedded default (nats-server, the simulated models, a worker
// running the coding harness in real git worktrees and real go test, ingestion into DuckDB)
// with its report, shared by the tests of this file. It is the one execution of the study in
// the test suite. The full study runs, not a reduction: on 2 cores it took 3 min 8 s at a
// load average of 3–14 and 5 min 37 s at 22–30 (docs/context.md). The tests compare the report
// with the DOM and with a recomputation from the Parquet export and check the study's
// structure; they hold no study result, which changes whenever the harness or the personas do.
var (
	ctxOnce sync.Once
	ctxFix  fixture
)

// codingSpec is the shipped study the fixture runs.
const codingSpec = "coding"

func contextFixture(t *testing.T) fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("builtin:coding builds and tests Go code in 160 worktrees")
	}
	ctxOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		scale := 0.0
		ctxFix.dataDir = filepath.Join(fixRoot, "context")
		ctxFix.res, ctxFix.err = demo.Run(ctx, demo.Config{DataDir: ctxFix.dataDir, Fresh: true, Spec: codingSpec, LatencyScale: &scale,
			Permutations: 200})
	})
	if ctxFix.err != nil {
		t.Fatalf("demo.Run(builtin:%s) = %v", codingSpec, ctxFix.err)
	}
	return ctxFix
}

// contextRunsSQL recomputes the context section's per-run figures from the exported Parquet of
// run_folds and events alone: the tier and budget from context.configured, peak context from
// context.prepared, the mechanisms from their events, the agent's turns from model.called
// (summarization calls apart), re-patches from file.changed; success, status and tokens from the
// folds of each run's latest attempt, when it is scored.
const contextRunsSQL = `
WITH folds AS (
    SELECT * FROM read_parquet('%[1]s/run_folds/*/*.parquet', hive_partitioning = true) WHERE study = '%[2]s'
), ev AS (
    SELECT * FROM read_parquet('%[1]s/events/*/*.parquet', hive_partitioning = true) WHERE study = '%[2]s'
), counted AS (
    SELECT * FROM folds f
    WHERE attempt = (SELECT max(attempt) FROM folds g WHERE g.run = f.run)
      AND status IN ('succeeded', 'failed', 'escalated', 'overflow')
), managed AS (
    SELECT run, attempt,
           max(json_extract_string(payload, '$.tier')) FILTER (WHERE type = 'context.configured') AS tier,
           max(CAST(json_extract(payload, '$.budget') AS BIGINT)) FILTER (WHERE type = 'context.configured') AS budget,
           max(CAST(json_extract(payload, '$.tokens') AS BIGINT)) FILTER (WHERE type = 'context.prepared') AS peak,
           count(*) FILTER (WHERE type = 'context.elided') AS elisions,
           count(*) FILTER (WHERE type = 'context.summarized') AS summaries,
           count(*) FILTER (WHERE type = 'context.recalled') AS recalls,
           count(*) FILTER (WHERE type = 'model.called' AND coalesce(json_extract_string(payload, '$.purpose'), '') <> 'summarize') AS turns,
           count(*) FILTER (WHERE type = 'file.changed' AND json_extract_string(payload, '$.repatch') = 'true') AS repatches
    FROM ev GROUP BY run, attempt
)
SELECT c.run, c.attempt, c.task, c.model, c.condition, c.input_index, c.seed_index, c.components, c.success,
       c.status = 'overflow' AS overflow, c.tokens, m.tier, m.budget, coalesce(m.peak, 0) AS peak, m.elisions, m.summaries,
       m.recalls, m.turns, m.repatches
FROM counted c JOIN managed m USING (run, attempt)
WHERE m.tier IS NOT NULL
ORDER BY c.model, m.tier, m.budget, c.task, c.input_index, c.seed_index, c.condition`

// toolCallsSQL lists every tool call of the study's events in the Parquet export, in the order
// of each attempt's history: the tool and its arguments as the event recorded them.
const toolCallsSQL = `
SELECT run, attempt, json_extract_string(payload, '$.tool') AS tool, CAST(json_extract(payload, '$.args') AS VARCHAR) AS args
FROM read_parquet('%[1]s/events/*/*.parquet', hive_partitioning = true)
WHERE study = '%[2]s' AND type = 'tool.called'
ORDER BY run, attempt, seq`

// parquetRun is one scored context-managed run as the Parquet export has it.
type parquetRun struct {
	run                                     string
	attempt                                 int64
	task, model, condition                  string
	input, seed                             int64
	components                              []string
	success, overflow                       bool
	tokens                                  float64
	tier                                    string
	budget                                  int64
	peak, elisions, summaries, recalls, tns float64
	repatches                               float64
	calls                                   []parquetCall
}

// parquetCall is one tool call of a run: the tool's name and its arguments as JSON text.
type parquetCall struct{ tool, args string }

func (r parquetRun) cell() analysis.CellKey {
	return analysis.CellKey{Task: r.task, Model: r.model, Condition: r.condition}
}

func readParquetRuns(t *testing.T, ctx context.Context, dir, study string) []parquetRun {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, fmt.Sprintf(contextRunsSQL, dir, study))
	if err != nil {
		t.Fatalf("recompute: %v", err)
	}
	defer rows.Close()
	var out []parquetRun
	byAttempt := map[string]int{}
	for rows.Next() {
		var r parquetRun
		var comps any
		if err := rows.Scan(&r.run, &r.attempt, &r.task, &r.model, &r.condition, &r.input, &r.seed, &comps, &r.success, &r.overflow,
			&r.tokens, &r.tier, &r.budget, &r.peak, &r.elisions, &r.summaries, &r.recalls, &r.tns, &r.repatches); err != nil {
			t.Fatal(err)
		}
		list, _ := comps.([]any)
		for _, c := range list {
			r.components = append(r.components, c.(string))
		}
		slices.Sort(r.components)
		byAttempt[fmt.Sprint(r.run, "/", r.attempt)] = len(out)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	calls, err := db.QueryContext(ctx, fmt.Sprintf(toolCallsSQL, dir, study))
	if err != nil {
		t.Fatalf("tool calls: %v", err)
	}
	defer calls.Close()
	for calls.Next() {
		var run string
		var attempt int64
		var c parquetCall
		if err := calls.Scan(&run, &attempt, &c.tool, &c.args); err != nil {
			t.Fatal(err)
		}
		if i, ok := byAttempt[fmt.Sprint(run, "/", attempt)]; ok {
			out[i].calls = append(out[i].calls, c)
		}
	}
	if err := calls.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// exportContextStudy exports the fixture's database to Parquet (the analyzer's export) and
// returns the directory.
func exportContextStudy(t *testing.T, ctx context.Context, fx fixture) string {
	t.Helper()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: warehouse.DefaultPath(fx.dataDir), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	if _, err := queryapi.Export(ctx, w.DB(), dir, warehouse.Tables()); err != nil {
		t.Fatalf("queryapi.Export() = %v", err)
	}
	return dir
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestContextReportMatchesParquet: the context section of builtin:coding's report.json — per
// model, tier and budget the cells, runs, successes, overflows, peak context, tokens, turns,
// re-patches, mechanism invocations, recall usage and the mean RR, DI, TSS and AC of the cells
// with the number of cells behind each; per paired comparison the pairs, the discordant counts,
// the exact McNemar p, the Mann–Whitney p and Cliff's δ of tokens and turns and the
// Benjamini–Hochberg q of each family — equals its recomputation from the Parquet export with
// DuckDB SQL, gonum's distributions and the formulas written out here: RR and DI by grouping
// the folds' traces in SQL, TSS and AC from the exported tool.called events by the definitions
// of docs/metrics.md (edit distance over tool names; Jaccard overlap of argument leaves, calls
// aligned by position), not by package metrics.
func TestContextReportMatchesParquet(t *testing.T) {
	fx := contextFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := exportContextStudy(t, ctx, fx)
	got := readReportJSON(t, fx.res.Dir)
	if got.Context == nil {
		t.Fatal("report.json has no context section")
	}
	runs := readParquetRuns(t, ctx, dir, fx.res.Study)
	if len(runs) != fx.res.Runs {
		t.Fatalf("%d scored context-managed runs in the Parquet export, the study ran %d", len(runs), fx.res.Runs)
	}

	// Per-cell RR and DI from the Parquet (recomputeSQL, as TestReportMatchesParquet); TSS and
	// AC from the runs' tool calls.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type cellValues struct{ rr, di, tss, ac sql.NullFloat64 }
	cellMetrics := map[analysis.CellKey]*cellValues{}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(recomputeSQL, dir, fx.res.Study))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k analysis.CellKey
		var n, successes, distinct int64
		var rate, meanTok, medTok, meanLat, medLat, retries, esc, plan float64
		var v cellValues
		if err := rows.Scan(&k.Task, &k.Model, &k.Condition, &n, &successes, &rate, &meanTok, &medTok, &meanLat, &medLat,
			&retries, &esc, &distinct, &v.rr, &v.di, &plan); err != nil {
			t.Fatal(err)
		}
		cellMetrics[k] = &v
	}
	rows.Close()
	runsOf := map[analysis.CellKey][]parquetRun{}
	for _, r := range runs {
		runsOf[r.cell()] = append(runsOf[r.cell()], r)
	}
	reportCells := map[analysis.CellKey]analysis.Cell{}
	for _, c := range got.Metrics.Cells {
		reportCells[c.CellKey] = c
	}
	for k, rs := range runsOf {
		v := cellMetrics[k]
		if v == nil {
			t.Fatalf("cell %s has context-managed runs but no row of recomputeSQL", k)
		}
		v.tss, v.ac = toolSequenceSimilarity(rs), argumentConsistency(rs)
		// The cell's own figures first: a difference shows where it starts.
		m := reportCells[k].Metrics
		for _, c := range []struct {
			what string
			got  metrics.Value
			want sql.NullFloat64
		}{{"RR", m.RR.Value, v.rr}, {"DI", m.DI.Value, v.di}, {"TSS", m.TSS.Value, v.tss}, {"AC", m.AC.Value, v.ac}} {
			if c.got.Valid != c.want.Valid || !near(c.got.V, c.want.Float64) {
				t.Errorf("cell %s: report.json %s = %v, Parquet recomputation %v", k, c.what, c.got, c.want)
			}
		}
	}

	type gkey struct {
		model, tier string
		budget      int64
	}
	type agg struct {
		runs, successes, overflows, recallRuns       int
		peak, tokens, turns, repatch, elis, summ, rc float64
		cells                                        map[analysis.CellKey]bool
	}
	groups := map[gkey]*agg{}
	for _, r := range runs {
		k := gkey{r.model, r.tier, r.budget}
		a := groups[k]
		if a == nil {
			a = &agg{cells: map[analysis.CellKey]bool{}}
			groups[k] = a
		}
		a.runs++
		a.successes += b2i(r.success)
		a.overflows += b2i(r.overflow)
		a.recallRuns += b2i(r.recalls > 0)
		a.peak += r.peak
		a.tokens += r.tokens
		a.turns += r.tns
		a.repatch += r.repatches
		a.elis += r.elisions
		a.summ += r.summaries
		a.rc += r.recalls
		a.cells[r.cell()] = true
	}
	if len(got.Context.Groups) != len(groups) {
		t.Errorf("report.json has %d context groups, the Parquet %d", len(got.Context.Groups), len(groups))
	}
	for _, g := range got.Context.Groups {
		a := groups[gkey{g.Model, g.Tier, g.Budget}]
		if a == nil {
			t.Errorf("group %s %s %d is in report.json but not in the Parquet", g.Model, g.Tier, g.Budget)
			continue
		}
		n := float64(a.runs)
		var rr, di, tss, ac []float64
		for k := range a.cells {
			v := cellMetrics[k]
			for _, p := range []struct {
				dst *[]float64
				v   sql.NullFloat64
			}{{&rr, v.rr}, {&di, v.di}, {&tss, v.tss}, {&ac, v.ac}} {
				if p.v.Valid {
					*p.dst = append(*p.dst, p.v.Float64)
				}
			}
		}
		name := fmt.Sprintf("%s %s %d", g.Model, g.Tier, g.Budget)
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"runs", float64(g.Runs), n},
			{"cells", float64(g.Cells), float64(len(a.cells))},
			{"successes", float64(g.Successes), float64(a.successes)},
			{"overflows", float64(g.Overflows), float64(a.overflows)},
			{"peak context", g.PeakContext, a.peak / n},
			{"tokens", g.Tokens, a.tokens / n},
			{"turns", g.Turns, a.turns / n},
			{"re-patches", g.Repatches, a.repatch / n},
			{"elisions", g.Elisions, a.elis / n},
			{"summaries", g.Summaries, a.summ / n},
			{"recalls", g.Recalls, a.rc / n},
			{"runs with recall", float64(g.RecallRuns), float64(a.recallRuns)},
			{"RR", g.RR.V, meanOf(rr)},
			{"DI", g.DI.V, meanOf(di)},
			{"TSS", g.TSS.V, meanOf(tss)},
			{"AC", g.AC.V, meanOf(ac)},
			{"cells behind RR", float64(g.RRCells), float64(len(rr))},
			{"cells behind DI", float64(g.DICells), float64(len(di))},
			{"cells behind TSS", float64(g.TSSCells), float64(len(tss))},
			{"cells behind AC", float64(g.ACCells), float64(len(ac))},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s: report.json %s = %v, Parquet recomputation %v", name, c.what, c.got, c.want)
			}
		}
		for _, v := range []struct {
			what string
			v    metrics.Value
			n    int
		}{{"RR", g.RR, len(rr)}, {"DI", g.DI, len(di)}, {"TSS", g.TSS, len(tss)}, {"AC", g.AC, len(ac)}} {
			if v.v.Valid != (v.n > 0) {
				t.Errorf("%s: report.json %s defined = %v, but %d cells define it in the Parquet", name, v.what, v.v.Valid, v.n)
			}
		}
	}

	checkContextComparisons(t, got.Context.Comparisons, runs)
}

// toolSequenceSimilarity is TSS of a cell's runs as docs/metrics.md defines it: the mean over
// the pairs of distinct runs of 1 − lev(s, t) / max(|s|, |t|) (1 when both are empty), lev the
// edit distance over tool names; invalid below two runs.
func toolSequenceSimilarity(runs []parquetRun) sql.NullFloat64 {
	if len(runs) < 2 {
		return sql.NullFloat64{}
	}
	sum, pairs := 0.0, 0
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			s, u := runs[i].calls, runs[j].calls
			pairs++
			if len(s) == 0 && len(u) == 0 {
				sum++
				continue
			}
			// Levenshtein distance, one row at a time.
			prev := make([]int, len(u)+1)
			for k := range prev {
				prev[k] = k
			}
			for a := 1; a <= len(s); a++ {
				cur := make([]int, len(u)+1)
				cur[0] = a
				for b := 1; b <= len(u); b++ {
					sub := prev[b-1]
					if s[a-1].tool != u[b-1].tool {
						sub++
					}
					cur[b] = min(prev[b]+1, cur[b-1]+1, sub)
				}
				prev = cur
			}
			sum += 1 - float64(prev[len(u)])/float64(max(len(s), len(u)))
		}
	}
	return sql.NullFloat64{Float64: sum / float64(pairs), Valid: true}
}

// argumentConsistency is AC of a cell's runs as docs/metrics.md defines it: calls aligned by
// position; for every pair of distinct runs and every step both have a call, the Jaccard overlap
// of the two calls' argument leaves (1 when both have none); the mean over all (pair, step);
// invalid when no two runs have a call at the same step.
func argumentConsistency(runs []parquetRun) sql.NullFloat64 {
	sum, n := 0.0, 0
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			for k := 0; k < min(len(runs[i].calls), len(runs[j].calls)); k++ {
				a, b := argLeaves(runs[i].calls[k].args), argLeaves(runs[j].calls[k].args)
				n++
				if len(a) == 0 && len(b) == 0 {
					sum++
					continue
				}
				shared := 0
				for l := range a {
					if b[l] {
						shared++
					}
				}
				sum += float64(shared) / float64(len(a)+len(b)-shared)
			}
		}
	}
	if n == 0 {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: sum / float64(n), Valid: true}
}

// argLeaves is the leaf set of a call's argument JSON: each scalar with the path of keys and
// indexes that leads to it; an empty object or array below the top level is a leaf of its
// own; the top-level object itself is not.
func argLeaves(args string) map[string]bool {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(fmt.Sprintf("tool call arguments %q are not JSON: %v", args, err))
	}
	out := map[string]bool{}
	var walk func(path []string, v any, top bool)
	walk = func(path []string, v any, top bool) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 && !top {
				out[leafKey(path, "{}")] = true
			}
			for key, e := range x {
				walk(append(slices.Clone(path), "k"+strconv.Quote(key)), e, false)
			}
		case []any:
			if len(x) == 0 && !top {
				out[leafKey(path, "[]")] = true
			}
			for i, e := range x {
				walk(append(slices.Clone(path), "i"+strconv.Itoa(i)), e, false)
			}
		default:
			b, _ := json.Marshal(x)
			out[leafKey(path, string(b))] = true
		}
	}
	walk(nil, v, true)
	return out
}

func leafKey(path []string, value string) string { return strings.Join(path, "/") + "=" + value }

// checkContextComparisons recomputes each paired comparison from the Parquet runs: pairs are
// runs of one model, task, input and seed index whose conditions differ in the factor alone.
func checkContextComparisons(t *testing.T, cs []analysis.ContextComparison, runs []parquetRun) {
	t.Helper()
	without := func(comps []string, drop string) string {
		return fmt.Sprint(slices.DeleteFunc(slices.Clone(comps), func(c string) bool { return c == drop }))
	}
	type recomputed struct {
		pairs, b, c          int
		sa, sb               float64
		tokA, tokB, trA, trB []float64
	}
	want := map[string]*recomputed{}
	key := func(model, factor, a, b, scope string) string {
		return model + "|" + factor + "|" + a + "|" + b + "|" + scope
	}
	add := func(k string, ra, rb parquetRun) {
		w := want[k]
		if w == nil {
			w = &recomputed{}
			want[k] = w
		}
		w.pairs++
		w.sa += float64(b2i(ra.success))
		w.sb += float64(b2i(rb.success))
		w.b += b2i(ra.success && !rb.success)
		w.c += b2i(!ra.success && rb.success)
		w.tokA, w.tokB = append(w.tokA, ra.tokens), append(w.tokB, rb.tokens)
		w.trA, w.trB = append(w.trA, ra.tns), append(w.trB, rb.tns)
	}
	for _, a := range runs {
		for _, b := range runs {
			if a.model != b.model || a.task != b.task || a.input != b.input || a.seed != b.seed {
				continue
			}
			// A managed tier against T0: same budget and components.
			if a.tier == "T0" && b.tier != "T0" && a.budget == b.budget && fmt.Sprint(a.components) == fmt.Sprint(b.components) {
				add(key(a.model, "tier", "T0", b.tier, fmt.Sprintf("budget %d", a.budget)), a, b)
			}
			// Planning on against off: same tier, budget and other components.
			if a.tier == b.tier && a.budget == b.budget && !slices.Contains(a.components, "update_plan") &&
				slices.Contains(b.components, "update_plan") && without(a.components, "update_plan") == without(b.components, "update_plan") {
				add(key(a.model, "planning", "off", "on", "tier "+a.tier), a, b)
			}
		}
	}
	if len(cs) != len(want) {
		t.Errorf("report.json has %d context comparisons, the Parquet pairs give %d", len(cs), len(want))
	}
	var ps, tokPs, turnPs []float64
	for _, c := range cs {
		w := want[key(c.Model, c.Factor, c.A, c.B, c.Scope)]
		name := fmt.Sprintf("%s %s %s vs %s (%s)", c.Model, c.Factor, c.B, c.A, c.Scope)
		if w == nil {
			t.Errorf("%s: in report.json, no such pairs in the Parquet", name)
			continue
		}
		tokens, turns := mannWhitney(w.tokB, w.tokA), mannWhitney(w.trB, w.trA)
		for _, chk := range []struct {
			what      string
			got, want float64
		}{
			{"pairs", float64(c.Pairs), float64(w.pairs)},
			{"b (A ok, B not)", float64(c.Disc[0]), float64(w.b)},
			{"c (B ok, A not)", float64(c.Disc[1]), float64(w.c)},
			{"success A", c.SuccessA, w.sa / float64(w.pairs)},
			{"success B", c.SuccessB, w.sb / float64(w.pairs)},
			{"McNemar p", c.P.V, mcnemar(w.b, w.c)},
			{"tokens A", c.TokensA, meanOf(w.tokA)},
			{"tokens B", c.TokensB, meanOf(w.tokB)},
			{"tokens Mann–Whitney p", c.TokensP.V, tokens.p},
			{"tokens Cliff's δ", c.TokensDelta.V, tokens.delta},
			{"turns A", c.TurnsA, meanOf(w.trA)},
			{"turns B", c.TurnsB, meanOf(w.trB)},
			{"turns Mann–Whitney p", c.TurnsP.V, turns.p},
			{"turns Cliff's δ", c.TurnsDelta.V, turns.delta},
		} {
			if !near(chk.got, chk.want) {
				t.Errorf("%s: report.json %s = %v, Parquet recomputation %v", name, chk.what, chk.got, chk.want)
			}
		}
		ps, tokPs, turnPs = append(ps, c.P.V), append(tokPs, tokens.p), append(turnPs, turns.p)
	}
	// Benjamini–Hochberg across each column of the section.
	qs, tokQs, turnQs := bh(ps), bh(tokPs), bh(turnPs)
	for i, c := range cs {
		if i >= len(qs) {
			break
		}
		if !near(c.PAdjusted.V, qs[i]) || !near(c.TokensQ.V, tokQs[i]) || !near(c.TurnsQ.V, turnQs[i]) || c.Significant != (qs[i] <= 0.05) {
			t.Errorf("%s %s vs %s: q = %v, %v, %v (significant %v); recomputed %v, %v, %v", c.Factor, c.B, c.A,
				c.PAdjusted.V, c.TokensQ.V, c.TurnsQ.V, c.Significant, qs[i], tokQs[i], turnQs[i])
		}
	}
	if len(cs) < 3 {
		t.Errorf("%d comparisons, want T4 against T0 at both budgets and planning in T4", len(cs))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// mcnemar is the two-sided exact McNemar test: twice the binomial(b + c, ½) probability of a
// count at most min(b, c), capped at 1.
func mcnemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	return math.Min(1, 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(min(b, c))))
}

type mwResult struct{ p, delta float64 }

// mannWhitney is the two-sided Mann–Whitney U test of x against y as docs/metrics.md defines
// it, written out: without ties and with a sample of at most 8 the exact null distribution of
// U, by enumerating every assignment of ranks to x; else the normal approximation with tie and
// continuity correction.
func mannWhitney(x, y []float64) mwResult {
	n1, n2 := len(x), len(y)
	u1 := 0.0
	for _, a := range x {
		for _, b := range y {
			switch {
			case a > b:
				u1++
			case a == b:
				u1 += 0.5
			}
		}
	}
	res := mwResult{delta: 2*u1/float64(n1*n2) - 1}
	all := append(slices.Clone(x), y...)
	sort.Float64s(all)
	ties, tieTerm := false, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j] == all[i] {
			j++
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j
	}
	u2 := float64(n1*n2) - u1
	if !ties && min(n1, n2) <= 8 {
		n := n1 + n2
		at, total := 0, 0
		// Every subset of n1 ranks of 1…n is equally likely under the null; U of x is the
		// subset's rank sum less n1(n1+1)/2.
		var walk func(next, left, sum int)
		walk = func(next, left, sum int) {
			if left == 0 {
				total++
				if float64(sum-n1*(n1+1)/2) <= math.Min(u1, u2) {
					at++
				}
				return
			}
			for r := next; r <= n-left+1; r++ {
				walk(r+1, left-1, sum+r)
			}
		}
		walk(1, n1, 0)
		res.p = math.Min(1, 2*float64(at)/float64(total))
		return res
	}
	n := float64(n1 + n2)
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sigma == 0 {
		res.p = 1
		return res
	}
	z := (math.Max(u1, u2) - float64(n1*n2)/2 - 0.5) / sigma
	res.p = math.Max(0, math.Min(1, 2*distuv.UnitNormal.Survival(z)))
	return res
}

// bh is the Benjamini–Hochberg adjustment: q_(i) = min over j ≥ i of p_(j)·m/j, capped at 1.
func bh(ps []float64) []float64 {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	q := make([]float64, m)
	running := 1.0
	for r := m - 1; r >= 0; r-- {
		running = math.Min(running, ps[idx[r]]*float64(m)/float64(r+1))
		q[idx[r]] = running
	}
	return q
}

// TestContextReportInBrowser opens the fixture's report.html in Debian's Chromium, driven by
// Playwright (e2e/context.mjs), and reads the context section as a user sees it: the heading,
// every row of its four tables as report.json's figures print, the budget-curve plot decoded,
// drawn and shown below the budget table with its caption; no console error and no request
// leaving the file. Without chromium or node the test skips, except under CI.
func TestContextReportInBrowser(t *testing.T) {
	pw := browsertest.Setup(t, context.Background())
	fx := contextFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	r := readReportJSON(t, fx.res.Dir)
	if r.Context == nil {
		t.Fatal("report.json has no context section")
	}
	type table struct {
		Header []string   `json:"header"`
		Rows   [][]string `json:"rows"`
	}
	type plot struct {
		Alt     string `json:"alt"`
		Caption string `json:"caption"`
	}
	expect := struct {
		Tables map[string]table `json:"tables"`
		Plots  []plot           `json:"plots"`
	}{Tables: map[string]table{}}
	for _, tb := range []report.Table{r.ContextTierTable(), r.ContextDeterminismTable(), r.ContextBudgetTable(), r.ContextComparisonTable()} {
		expect.Tables[tb.ID] = table{tb.Header, tb.Rows}
	}
	plots, err := r.ContextPlots()
	models := map[string]bool{}
	for _, g := range r.Context.Groups {
		models[g.Model] = true
	}
	if err != nil || len(plots) != len(models) {
		t.Fatalf("ContextPlots() = %d plots, %v; want one per model (%d)", len(plots), err, len(models))
	}
	for _, p := range plots {
		expect.Plots = append(expect.Plots, plot{p.Title, p.Caption})
	}
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	b, _ := json.MarshalIndent(expect, "", "  ")
	if err := os.WriteFile(expectFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	shots := browsertest.ArtifactsDir(t, "report")
	pw.Run(t, ctx, filepath.Join("e2e", "context.mjs"), "REPORT_HTML="+filepath.Join(fx.res.Dir, report.FileHTML),
		"REPORT_EXPECT="+expectFile, "REPORT_SHOTS="+shots)
	if st, err := os.Stat(filepath.Join(shots, "context-section.png")); err != nil || st.Size() < 5000 {
		t.Errorf("screenshot context-section.png: %v", err)
	}
}

// TestCodingStudy checks builtin:coding's structure, end to end: every run of the design ran and
// was scored; every cell of tier × budget × planning × action space × persona holds the spec's N
// runs in the Parquet export; the report has one context group per persona, tier and budget
// pooling that tier and budget's four conditions (planning × action space), its counts add up to
// the study's, and it compares every managed tier with T0 at each budget and planning on with off
// in each tier, on every run of both sides. And what the budgets were chosen for (docs/context.md):
// T0 overflows the small window, every managed tier acts on it (elides, cuts or summarizes), and
// no managed tier (T1–T4) overflows: they elide the model's bulky call arguments and the
// verifications too, and drop or cut what is left (docs/context.md). The figures
// themselves are the report's, checked against the Parquet by TestContextReportMatchesParquet.
func TestCodingStudy(t *testing.T) {
	raw, err := study.ShippedSpec(codingSpec)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := study.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	tiers, budgets := map[string]bool{}, map[int64]bool{}
	for _, c := range spec.Conditions {
		cc := spec.CustomConditions[c]
		if cc.Context == nil {
			t.Fatalf("builtin:coding condition %s has no context", c)
		}
		tiers[cc.Context.Tier], budgets[int64(cc.Context.Budget)] = true, true
	}
	if len(tiers) != 5 || len(budgets) != 2 || len(spec.Conditions) != 5*2*2*2 || len(spec.Models) != 2 || spec.Runs < 2 {
		t.Fatalf("builtin:coding has tiers %v, budgets %v, %d conditions, models %v, N = %d; want T0–T4 × 2 budgets × planning × action space, 2 personas, N ≥ 2",
			tiers, budgets, len(spec.Conditions), spec.Models, spec.Runs)
	}
	small := slices.Min(slices.Collect(maps.Keys(budgets)))

	fx := contextFixture(t)
	want := len(spec.Models) * len(spec.Conditions) * len(spec.Tasks) * len(spec.Inputs) * spec.Runs
	if fx.res.Runs != want {
		t.Fatalf("the study ran %d runs, want %d", fx.res.Runs, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := readParquetRuns(t, ctx, exportContextStudy(t, ctx, fx), fx.res.Study)
	if len(runs) != want {
		t.Errorf("%d scored runs in the Parquet export, want all %d", len(runs), want)
	}
	type design struct {
		model, tier    string
		budget         int64
		planning, bash bool
	}
	perCell := map[design]int{}
	for _, r := range runs {
		perCell[design{r.model, r.tier, r.budget, slices.Contains(r.components, events.ComponentUpdatePlan),
			slices.Contains(r.components, events.ComponentBashOnly)}]++
	}
	for _, m := range spec.Models {
		for tier := range tiers {
			for b := range budgets {
				for _, plan := range []bool{false, true} {
					for _, bash := range []bool{false, true} {
						d := design{m, tier, b, plan, bash}
						if got := perCell[d]; got != spec.Runs*len(spec.Tasks)*len(spec.Inputs) {
							t.Errorf("%+v: %d scored runs, want %d", d, got, spec.Runs*len(spec.Tasks)*len(spec.Inputs))
						}
					}
				}
			}
		}
	}

	r := readReportJSON(t, fx.res.Dir)
	if r.Context == nil {
		t.Fatal("report.json has no context section")
	}
	if r.Basis.CountedRuns != int64(want) || len(r.Metrics.Cells) != len(spec.Models)*len(spec.Conditions)*len(spec.Tasks) {
		t.Errorf("report basis: %d counted runs, %d cells; want %d and %d", r.Basis.CountedRuns, len(r.Metrics.Cells), want,
			len(spec.Models)*len(spec.Conditions)*len(spec.Tasks))
	}
	if len(r.Context.Groups) != len(spec.Models)*len(tiers)*len(budgets) {
		t.Errorf("%d context groups, want one per persona, tier and budget: %d", len(r.Context.Groups), len(spec.Models)*len(tiers)*len(budgets))
	}
	type tally struct{ runs, overflows, acted int }
	by := map[string]*tally{}
	total := 0
	for _, g := range r.Context.Groups {
		name := fmt.Sprintf("%s %s %d", g.Model, g.Tier, g.Budget)
		total += g.Runs
		// A group pools its tier and budget's conditions: planning on and off, file tools and bash.
		if g.Cells != 4*len(spec.Tasks) || g.Runs != 4*len(spec.Tasks)*len(spec.Inputs)*spec.Runs {
			t.Errorf("%s: %d cells, %d runs; want the 4 conditions of the tier and budget (planning × action space), %d runs",
				name, g.Cells, g.Runs, 4*len(spec.Tasks)*len(spec.Inputs)*spec.Runs)
		}
		if g.Successes+g.Overflows > g.Runs || g.RecallRuns > g.Runs || g.RRCells != g.Cells || g.DICells != g.Cells || g.TSSCells != g.Cells {
			t.Errorf("%s: counts do not add up: %+v", name, g)
		}
		if g.Tier == "T0" && (g.Elisions != 0 || g.Summaries != 0 || g.Recalls != 0) {
			t.Errorf("%s: T0 manages nothing, yet %v elisions, %v summaries, %v recalls per run", name, g.Elisions, g.Summaries, g.Recalls)
		}
		t.Logf("%s: %d runs, %d succeeded, %d overflowed, peak %.0f, elisions %.2f, summaries %.2f, recalls %.2f",
			name, g.Runs, g.Successes, g.Overflows, g.PeakContext, g.Elisions, g.Summaries, g.Recalls)
		if g.Budget != small {
			continue
		}
		tl := by[g.Tier]
		if tl == nil {
			tl = &tally{}
			by[g.Tier] = tl
		}
		tl.runs += g.Runs
		tl.overflows += g.Overflows
		if g.Elisions > 0 || g.Summaries > 0 {
			tl.acted++
		}
	}
	if total != want {
		t.Errorf("the context groups hold %d runs, the study %d", total, want)
	}
	for tier := range tiers {
		tl := by[tier]
		switch {
		case tl == nil || tl.runs == 0:
			t.Errorf("%s at %d tokens: no runs in the context section", tier, small)
		case tier == "T0" && tl.overflows == 0:
			t.Errorf("T0 at %d tokens: no run overflowed, want the small window to overflow", small)
		case tier != "T0" && tl.overflows != 0:
			t.Errorf("%s at %d tokens: %d of %d runs overflowed, want none", tier, small, tl.overflows, tl.runs)
		case tier != "T0" && tl.acted == 0:
			t.Errorf("%s at %d tokens: no run elided or summarized anything", tier, small)
		}
	}

	// Comparisons: per persona every managed tier against T0 at each budget (the tier's four
	// conditions paired with T0's, N seeds each) and planning on against off in each tier (two
	// budgets × two action spaces, N seeds each). Skipped ones would be listed.
	wantComps := map[string]int{}
	for _, m := range spec.Models {
		for tier := range tiers {
			if tier != "T0" {
				for b := range budgets {
					wantComps[fmt.Sprintf("%s|tier|T0|%s|budget %d", m, tier, b)] = 4 * len(spec.Tasks) * len(spec.Inputs) * spec.Runs
				}
			}
			wantComps[fmt.Sprintf("%s|planning|off|on|tier %s", m, tier)] = 4 * len(spec.Tasks) * len(spec.Inputs) * spec.Runs
		}
	}
	for _, c := range r.Context.Comparisons {
		k := strings.Join([]string{c.Model, c.Factor, c.A, c.B, c.Scope}, "|")
		if n, ok := wantComps[k]; !ok || c.Pairs != n {
			t.Errorf("comparison %s: %d pairs, want %d (listed %v)", k, c.Pairs, n, ok)
		}
		delete(wantComps, k)
	}
	for k := range wantComps {
		t.Errorf("comparison %s is missing from the report", k)
	}
}
