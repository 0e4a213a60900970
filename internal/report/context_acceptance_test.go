package report_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/warehouse"
	"gonum.org/v1/gonum/stat/distuv"
)

// ctxFix is a small coding study with context conditions (testdata/context-study.json: T0 at
// 1600 tokens, T0 and T4 at 2000 and 8000, T4 with planning at 2000; N = 2, a simulated
// persona) run end to end on
// the embedded default — nats-server, the simulated models, a worker running the coding
// harness in real git worktrees, ingestion into DuckDB — and its report, shared by the tests
// of this file.
var (
	ctxOnce sync.Once
	ctxFix  fixture
)

func contextFixture(t *testing.T) fixture {
	t.Helper()
	ctxOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		spec, err := filepath.Abs(filepath.Join("testdata", "context-study.json"))
		if err != nil {
			ctxFix.err = err
			return
		}
		scale := 0.0
		ctxFix.dataDir = filepath.Join(fixRoot, "context")
		ctxFix.res, ctxFix.err = demo.Run(ctx, demo.Config{DataDir: ctxFix.dataDir, Fresh: true, Spec: spec, LatencyScale: &scale,
			Concurrency: 4, Permutations: 200})
	})
	if ctxFix.err != nil {
		t.Fatalf("demo.Run(context-study.json) = %v", ctxFix.err)
	}
	return ctxFix
}

// contextGroupSQL recomputes the context section's per-(model, tier, budget) figures from the
// exported Parquet of run_folds and events alone: the tier and budget from context.configured,
// peak context from context.prepared, the mechanisms from their events, the agent's turns
// from model.called (summarization calls apart); success, status and tokens from the folds of
// each run's latest attempt.
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
           count(*) FILTER (WHERE type = 'model.called' AND coalesce(json_extract_string(payload, '$.purpose'), '') <> 'summarize') AS turns
    FROM ev GROUP BY run, attempt
)
SELECT c.task, c.model, c.condition, c.input_index, c.seed_index, c.components, c.success, c.status = 'overflow' AS overflow,
       c.tokens, m.tier, m.budget, coalesce(m.peak, 0) AS peak, m.elisions, m.summaries, m.recalls, m.turns
FROM counted c JOIN managed m USING (run, attempt)
WHERE m.tier IS NOT NULL
ORDER BY c.model, m.tier, m.budget, c.task, c.input_index, c.seed_index, c.condition`

// parquetRun is one scored context-managed run as the Parquet export has it.
type parquetRun struct {
	task, model, condition                  string
	input, seed                             int64
	components                              []string
	success, overflow                       bool
	tokens                                  float64
	tier                                    string
	budget                                  int64
	peak, elisions, summaries, recalls, tns float64
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
	for rows.Next() {
		var r parquetRun
		var comps any
		if err := rows.Scan(&r.task, &r.model, &r.condition, &r.input, &r.seed, &comps, &r.success, &r.overflow, &r.tokens,
			&r.tier, &r.budget, &r.peak, &r.elisions, &r.summaries, &r.recalls, &r.tns); err != nil {
			t.Fatal(err)
		}
		list, _ := comps.([]any)
		for _, c := range list {
			r.components = append(r.components, c.(string))
		}
		slices.Sort(r.components)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
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

// TestContextReportMatchesParquet: the context section of report.json — per model, tier and
// budget the runs, successes, overflows, peak context, tokens, turns, mechanism invocations,
// recall usage and the mean RR and DI of the cells; per paired comparison the pairs, the
// discordant counts, the exact McNemar p, the Mann–Whitney p and Cliff's δ of tokens and turns
// and the Benjamini–Hochberg q of each family — equals its recomputation from the Parquet
// export with DuckDB SQL, gonum's distributions and the formulas written out here.
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
	if len(runs) != 12 {
		t.Fatalf("%d scored context-managed runs in the Parquet export, want 12 (6 conditions × N = 2)", len(runs))
	}

	// Per-cell RR and DI from the Parquet (recomputeSQL, as TestReportMatchesParquet).
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type rrdi struct{ rr, di float64 }
	cellMetrics := map[analysis.CellKey]rrdi{}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(recomputeSQL, dir, fx.res.Study))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k analysis.CellKey
		var n, successes, distinct int64
		var rate, meanTok, medTok, meanLat, medLat, retries, esc, plan float64
		var rr, di sql.NullFloat64
		if err := rows.Scan(&k.Task, &k.Model, &k.Condition, &n, &successes, &rate, &meanTok, &medTok, &meanLat, &medLat,
			&retries, &esc, &distinct, &rr, &di, &plan); err != nil {
			t.Fatal(err)
		}
		cellMetrics[k] = rrdi{rr.Float64, di.Float64}
	}
	rows.Close()

	type gkey struct {
		model, tier string
		budget      int64
	}
	type agg struct {
		runs, successes, overflows, recallRuns int
		peak, tokens, turns, elis, summ, rec   float64
		cells                                  map[analysis.CellKey]bool
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
		a.elis += r.elisions
		a.summ += r.summaries
		a.rec += r.recalls
		a.cells[analysis.CellKey{Task: r.task, Model: r.model, Condition: r.condition}] = true
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
		var rr, di []float64
		for k := range a.cells {
			rr, di = append(rr, cellMetrics[k].rr), append(di, cellMetrics[k].di)
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
			{"elisions", g.Elisions, a.elis / n},
			{"summaries", g.Summaries, a.summ / n},
			{"recalls", g.Recalls, a.rec / n},
			{"runs with recall", float64(g.RecallRuns), float64(a.recallRuns)},
			{"RR", g.RR.V, meanOf(rr)},
			{"DI", g.DI.V, meanOf(di)},
			{"cells behind RR", float64(g.RRCells), float64(len(rr))},
		} {
			if !near(c.got, c.want) {
				t.Errorf("%s: report.json %s = %v, Parquet recomputation %v", name, c.what, c.got, c.want)
			}
		}
	}
	// The fixture does what it is for: T0 overflows at 1600 tokens (the first observation does
	// not fit), not at 8000.
	if a := groups[gkey{"sim-steady", "T0", 1600}]; a == nil || a.overflows == 0 {
		t.Errorf("T0 at 1600 tokens: %+v, no run overflowed; the fixture's smallest budget no longer makes T0 overflow", a)
	}
	if a := groups[gkey{"sim-steady", "T0", 8000}]; a == nil || a.overflows != 0 {
		t.Errorf("T0 at 8000 tokens: %+v, want no overflow", a)
	}

	checkContextComparisons(t, got.Context.Comparisons, runs)
}

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
	chromium := need(t, "chromium", "/usr/bin/chromium")
	node := need(t, "node")
	npm := need(t, "npm")
	fx := contextFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e2e, err := filepath.Abs("e2e")
	if err != nil {
		t.Fatal(err)
	}
	installPlaywright(t, ctx, npm, e2e)

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
	if err != nil || len(plots) != 1 {
		t.Fatalf("ContextPlots() = %d plots, %v; want one (one model)", len(plots), err)
	}
	for _, p := range plots {
		expect.Plots = append(expect.Plots, plot{p.Title, p.Caption})
	}
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	b, _ := json.MarshalIndent(expect, "", "  ")
	if err := os.WriteFile(expectFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	shots := artifactsDir(t)
	cmd := exec.CommandContext(ctx, node, filepath.Join(e2e, "context.mjs"))
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "REPORT_HTML="+filepath.Join(fx.res.Dir, report.FileHTML), "REPORT_EXPECT="+expectFile,
		"REPORT_SHOTS="+shots, "CHROMIUM="+chromium, "REPORT_PROFILE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("context.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the browser check failed: %v", err)
	}
	if st, err := os.Stat(filepath.Join(shots, "context-section.png")); err != nil || st.Size() < 5000 {
		t.Errorf("screenshot context-section.png: %v", err)
	}
}

// need returns the path of a program the browser test needs; without it the test skips, or
// fails under CI (CI set), where .ci/run installs chromium and node.
func need(t *testing.T, name string, candidates ...string) string {
	t.Helper()
	for _, c := range append(candidates, name) {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found under CI: .ci/run installs it (apt-get install -y chromium nodejs npm)", name)
	}
	t.Skipf("%s not installed; skipping the report's browser test (apt-get install -y chromium nodejs npm)", name)
	return ""
}

// installPlaywright installs the pinned playwright-core of e2e/package-lock.json (npm ci)
// unless it is there already. It never downloads a browser: the check drives the system's
// chromium.
func installPlaywright(t *testing.T, ctx context.Context, npm, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err == nil {
		return
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// artifactsDir is where the browser test saves its screenshot: $DITTO_ARTIFACTS/report when
// set (CI keeps it), else a directory of the test's own.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("DITTO_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, "report")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}
