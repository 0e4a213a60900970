package metrics_test

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/dittolab/ditto/metrics"
)

// docExamples produce the worked examples of docs/metrics.md. In that
// document, the fenced block after each `<!-- checked: NAME -->` line must be
// exactly the output of docExamples[NAME] (TestDocExamples), so the numbers
// a reader works through are the numbers this package computes.
var docExamples = map[string]func(w io.Writer) error{
	"agreement":    docAgreement,
	"rr-vs-di":     docRRvsDI,
	"four-runs":    docFourRuns,
	"jaccard":      docJaccard,
	"success":      docSuccess,
	"summary":      docSummary,
	"production":   docProduction,
	"fisher":       docFisher,
	"mcnemar":      docMcNemar,
	"mann-whitney": docMannWhitney,
	"permutation":  docPermutation,
	"bh":           docBH,
	"compare":      docCompare,
	"sampled":      docSampled,
	"se-by-n":      docSEByN,
	"smallest-p":   docSmallestP,
}

// f3 formats a defined value with three decimals and an undefined one as
// "null", as the JSON would show it.
func f3(v metrics.Value) string {
	if !v.Valid {
		return "null"
	}
	return fmt.Sprintf("%.3f", v.V)
}

func docAgreement(w io.Writer) error {
	sigs := []string{"s0", "s0", "s1", "s0", "s1"}
	counts := []int64{3, 2}
	fmt.Fprintf(w, "signatures   %s\n", strings.Join(sigs, " "))
	fmt.Fprintf(w, "A            %s = %s\n", agreementFormula(counts), f3(metrics.AgreementOf(sigs)))
	// Leaving one run out: an s0 run leaves counts (2, 2), an s1 run (3, 1).
	for _, loo := range []struct {
		name   string
		counts []int64
	}{{"s0", []int64{2, 2}}, {"s1", []int64{3, 1}}} {
		fmt.Fprintf(w, "leave out %s %s = %s\n", loo.name, agreementFormula(loo.counts), f3(metrics.Agreement(loo.counts)))
	}
	e := metrics.AgreementEstimate(counts)
	fmt.Fprintf(w, "jackknife SE %s\n", f3(e.SE))
	fmt.Fprintf(w, "N = 2: A %s, SE %s\n", f3(metrics.AgreementEstimate([]int64{2}).Value), f3(metrics.AgreementEstimate([]int64{2}).SE))
	fmt.Fprintf(w, "N = 1: A %s\n", f3(metrics.Agreement([]int64{1})))
	return nil
}

// agreementFormula spells Σ n_k(n_k−1) / (N(N−1)) out for counts.
func agreementFormula(counts []int64) string {
	var terms []string
	var n, num int64
	for _, c := range counts {
		terms = append(terms, fmt.Sprintf("%d·%d", c, c-1))
		n += c
		num += c * (c - 1)
	}
	return fmt.Sprintf("(%s) / (%d·%d) = %d/%d", strings.Join(terms, " + "), n, n-1, num, n*(n-1))
}

// call builds a Call from a tool name and canonical JSON arguments.
func call(tool, args string) metrics.Call { return metrics.Call{Tool: tool, Args: args} }

func toolsOf(calls []metrics.Call) []string {
	t := make([]string, len(calls))
	for i, c := range calls {
		t[i] = c.Tool
	}
	return t
}

func docRRvsDI(w io.Writer) error {
	plan := `[{"state":"fetch","tool":"fetch_rates"},{"state":"calc","tool":"calculate"}]`
	states := []string{"fetch", "calc", "answer"}
	same := []metrics.Call{call("fetch_rates", `{"base":"EUR","date":"2024-01-05"}`), call("calculate", `{"amount":100,"rate":"EUR/USD"}`)}
	other := []metrics.Call{call("fetch_rates", `{"base":"EUR","date":"2024-01-05","source":"ecb"}`), call("calculate", `{"amount":100,"rate":"EUR/USD"}`)}
	out := `{"usd":109.5}`
	runs := []metrics.Run{
		{ID: "r1", Plan: plan, States: states, Tools: toolsOf(same), Calls: same, Output: out, Success: true},
		{ID: "r2", Plan: plan, States: states, Tools: toolsOf(same), Calls: same, Output: out, Success: true},
		{ID: "r3", Plan: plan, States: states, Tools: toolsOf(other), Calls: other, Output: out, Success: true},
	}
	m, err := metrics.ComputeCell(runs, metrics.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "distinct traces %d, tool sequences %d, state sequences %d, outputs %d, plans %d\n",
		m.DistinctTraces, m.DistinctToolSeqs, m.DistinctStateSeqs, m.DistinctOutputs, m.DistinctPlans)
	fmt.Fprintf(w, "RR %s   DI %s (tools %s, states %s, output %s)   plan %s\n",
		f3(m.RR.Value), f3(m.DI.Value), f3(m.ToolsAgree.Value), f3(m.StatesAgree.Value), f3(m.OutputAgree.Value), f3(m.PlanAgree.Value))
	fmt.Fprintf(w, "TSS %s   AC %s\n", f3(m.TSS.Value), f3(m.AC.Value))
	fmt.Fprintf(w, "Jaccard of the two fetch_rates argument sets: %.3f\n", metrics.ArgumentJaccard(same[0].Args, other[0].Args))
	return nil
}

// fourRuns: three runs take the planned path; the fourth retries its first
// tool call and returns a different total.
func fourRuns() []metrics.Run {
	load := call("load_data", `{"file":"q3.csv"}`)
	calc := call("calculate", `{"op":"sum"}`)
	report := call("generate_report", `{"format":"pdf"}`)
	planned := []metrics.Call{load, calc, report}
	retried := []metrics.Call{load, load, calc, report}
	states := []string{"load", "calc", "report"}
	runs := make([]metrics.Run, 4)
	for i := range runs {
		runs[i] = metrics.Run{ID: fmt.Sprintf("r%d", i+1), States: states, Calls: planned, Output: `{"total":42}`, Success: true,
			Tokens: int64(900 + 50*i), LatencyMS: float64(1100 + 100*i)}
	}
	runs[3].Calls, runs[3].Output, runs[3].Success, runs[3].Retries = retried, `{"total":41}`, false, 1
	for i := range runs {
		runs[i].Tools = toolsOf(runs[i].Calls)
	}
	return runs
}

func docFourRuns(w io.Writer) error {
	m, err := metrics.ComputeCell(fourRuns(), metrics.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "tools agreement  %s\n", f3(m.ToolsAgree.Value))
	fmt.Fprintf(w, "states agreement %s\n", f3(m.StatesAgree.Value))
	fmt.Fprintf(w, "output agreement %s   distinct outputs %d, modal share %s\n", f3(m.OutputAgree.Value), m.DistinctOutputs, f3(m.OutputModalShare))
	fmt.Fprintf(w, "DI               %s\n", f3(m.DI.Value))
	fmt.Fprintf(w, "RR               %s\n", f3(m.RR.Value))
	short := []string{"load_data", "calculate", "generate_report"}
	long := []string{"load_data", "load_data", "calculate", "generate_report"}
	fmt.Fprintf(w, "lev(planned, retried) = %d, similarity %.3f\n", metrics.Levenshtein(short, long), metrics.SequenceSimilarity(short, long))
	fmt.Fprintf(w, "TSS              %s\n", f3(m.TSS.Value))
	fmt.Fprintf(w, "AC               %s\n", f3(m.AC.Value))
	div := make([]string, len(m.Divergence))
	for i, v := range m.Divergence {
		div[i] = f3(v)
	}
	fmt.Fprintf(w, "divergence       [%s]\n", strings.Join(div, " "))
	fmt.Fprintf(w, "jackknife SE     RR %s, DI %s, TSS %s, AC %s\n", f3(m.RR.SE), f3(m.DI.SE), f3(m.TSS.SE), f3(m.AC.SE))
	fmt.Fprintf(w, "retries %d, %s per run\n", m.Harness.Retries, f3(m.Harness.RetriesPerRun))
	return nil
}

func docJaccard(w io.Writer) error {
	for _, p := range [][2]string{
		{`{"base":"EUR","date":"2024-01-05"}`, `{"base":"EUR","date":"2024-01-06"}`},
		{`{"base":"EUR","date":"2024-01-05"}`, `{"base":"EUR","date":"2024-01-05","source":"ecb"}`},
		{`{"ids":[1,2]}`, `{"ids":[2,1]}`},
		{`{"q":{"city":"Oslo"}}`, `{"q":{"city":"Oslo","days":3}}`},
		{`{}`, `{}`},
	} {
		fmt.Fprintf(w, "%-36s %-50s %.3f\n", p[0], p[1], metrics.ArgumentJaccard(p[0], p[1]))
	}
	return nil
}

func docSuccess(w io.Writer) error {
	runs := make([]metrics.Run, 10)
	for i := range runs {
		runs[i].Success = i < 8
	}
	m, err := metrics.ComputeCell(runs, metrics.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "success %d/%d = %s, 95%% Wilson interval [%s, %s]\n", m.Success.Successes, m.N, f3(m.Success.Rate), f3(m.Success.WilsonLow), f3(m.Success.WilsonHi))
	for _, pk := range m.PassK {
		fmt.Fprintf(w, "pass^%d %.3f\n", pk.K, pk.Value)
	}
	for _, c := range [][2]int{{2, 2}, {10, 20}} {
		lo, hi, err := metrics.Wilson(c[0], c[1], 0.95)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%d/%d: Wilson [%.3f, %.3f]\n", c[0], c[1], lo, hi)
	}
	tasks := []metrics.TaskTrials{{Trials: 10, Successes: 8}, {Trials: 4, Successes: 2}}
	var each []string
	for _, task := range tasks {
		v, err := metrics.PassHatK([]metrics.TaskTrials{task}, 2)
		if err != nil {
			return err
		}
		each = append(each, fmt.Sprintf("%.3f", v))
	}
	two, err := metrics.PassHatK(tasks, 2)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pass^2 over two tasks (8/10, 2/4): mean of %s = %.3f\n", strings.Join(each, " and "), two)
	return nil
}

func docSummary(w io.Writer) error {
	lat := []float64{1200, 1300, 800, 5000, 1100}
	s := metrics.Summarize(lat)
	fmt.Fprintf(w, "latency_ms %v\n", lat)
	fmt.Fprintf(w, "mean %s  sd %s  median %s  q1 %s  q3 %s  iqr %s  p95 %s\n",
		f3(s.Mean), f3(s.SD), f3(s.Median), f3(s.Q1), f3(s.Q3), f3(s.IQR), f3(s.P95))
	fmt.Fprintf(w, "p95 sits at position h = (n − 1)·0.95 = %.1f of the sorted values\n", float64(len(lat)-1)*0.95)
	return nil
}

// docProduction works the input-group pooling through, with the package's
// Agreement giving each group's own value: pooled A = Σ_g A_g·n_g(n_g−1) /
// Σ_g n_g(n_g−1) over the groups of 2 runs or more, and its jackknife SE
// leaving one such group out at a time.
func docProduction(w io.Writer) error {
	groups := []struct {
		name string
		sigs []string
	}{
		{"inv-1", []string{"a", "a", "a", "b"}},
		{"inv-2", []string{"c", "c", "c"}},
		{"inv-3", []string{"d"}},
	}
	// pooled returns the agreeing and total ordered pairs of the scored
	// groups other than skip.
	pooled := func(skip int) (agree, pairs []int64) {
		for i, g := range groups {
			n := int64(len(g.sigs))
			if i == skip || n < 2 {
				continue
			}
			a := metrics.AgreementOf(g.sigs)
			agree = append(agree, int64(math.Round(a.V*float64(n*(n-1)))))
			pairs = append(pairs, n*(n-1))
		}
		return agree, pairs
	}
	ratio := func(agree, pairs []int64) (string, float64) {
		var a, p int64
		var as, ps []string
		for i := range agree {
			a, p = a+agree[i], p+pairs[i]
			as, ps = append(as, fmt.Sprint(agree[i])), append(ps, fmt.Sprint(pairs[i]))
		}
		return fmt.Sprintf("(%s) / (%s)", strings.Join(as, " + "), strings.Join(ps, " + ")), float64(a) / float64(p)
	}
	var all []string
	unscored := 0
	for _, g := range groups {
		fmt.Fprintf(w, "%s  %-9s  n %d  A %s\n", g.name, strings.Join(g.sigs, " "), len(g.sigs), f3(metrics.AgreementOf(g.sigs)))
		all = append(all, g.sigs...)
		if len(g.sigs) < 2 {
			unscored += len(g.sigs)
		}
	}
	agree, pairs := pooled(-1)
	formula, rr := ratio(agree, pairs)
	fmt.Fprintf(w, "RR within inputs   %s = %.3f   (%d groups scored, %d run counted, not scored)\n", formula, rr, len(agree), unscored)
	var loo []float64
	for i, g := range groups {
		if len(g.sigs) < 2 {
			continue
		}
		formula, v := ratio(pooled(i))
		loo = append(loo, v)
		fmt.Fprintf(w, "leave out %s    %s = %.3f\n", g.name, formula, v)
	}
	var mean, ss float64
	for _, v := range loo {
		mean += v
	}
	mean /= float64(len(loo))
	for _, v := range loo {
		ss += (v - mean) * (v - mean)
	}
	k := float64(len(loo))
	fmt.Fprintf(w, "group jackknife SE %.3f\n", math.Sqrt((k-1)/k*ss))
	fmt.Fprintf(w, "all %d runs pooled across inputs (not a reproducibility figure): %s\n", len(all), f3(metrics.AgreementOf(all)))
	// The same through ComputeCellByInput, each signature a one-call trace.
	var runs []metrics.Run
	for _, g := range groups {
		for i, s := range g.sigs {
			runs = append(runs, metrics.Run{ID: g.name + "/" + fmt.Sprint(i), InputKey: g.name, Tools: []string{s},
				Calls: []metrics.Call{call(s, "{}")}, Output: "{}"})
		}
	}
	m, err := metrics.ComputeCellByInput(runs, metrics.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ComputeCellByInput: RR %s ± %s on %d input groups (%d runs), %d single run\n", f3(m.RR.Value), f3(m.RR.SE),
		m.InputGroups.Groups, m.InputGroups.GroupedRuns, m.InputGroups.SingleRuns)
	return nil
}

func docFisher(w io.Writer) error {
	p, err := metrics.FisherExact(8, 2, 1, 5)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "table [[8, 2], [1, 5]]  odds ratio (8·5)/(2·1) = %.0f  p = %.4f\n", 8.0*5/(2*1), p)
	return nil
}

func docMcNemar(w io.Writer) error {
	p, err := metrics.McNemarExact(1, 7)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "b = 1, c = 7  p = %.4f\n", p)
	return nil
}

func docMannWhitney(w io.Writer) error {
	a := []float64{900, 950, 1010, 1100}
	b := []float64{700, 720, 760, 800, 990}
	r, err := metrics.MannWhitneyU(a, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A %v  B %v\n", a, b)
	fmt.Fprintf(w, "U of A %.0f of %d pairs, method %s, p %.4f\n", r.U1, len(a)*len(b), r.Method, r.P)
	// What a report shows: Compare's effect size for the same tokens.
	var ra, rb []metrics.Run
	for _, v := range a {
		ra = append(ra, metrics.Run{Tokens: int64(v)})
	}
	for _, v := range b {
		rb = append(rb, metrics.Run{Tokens: int64(v)})
	}
	cs, err := metrics.Compare(ra, rb, metrics.CompareConfig{Permutations: 1})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Quantity == metrics.QuantityTokens {
			fmt.Fprintf(w, "Cliff's δ(A, B) %.3f, reported δ(B, A) %s\n", r.CliffsDelta, f3(c.EffectSize))
		}
	}
	a2 := []float64{900, 900, 950, 1000, 1000, 1100, 1200, 1200, 1300, 1400}
	b2 := []float64{800, 800, 900, 900, 950, 1000, 1000, 1000, 1100, 1150}
	r2, err := metrics.MannWhitneyU(a2, b2)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "with ties, 10 and 10 values: U of A %.1f, method %s, p %.4f, δ(B, A) %.3f\n", r2.U1, r2.Method, r2.P, -r2.CliffsDelta)
	return nil
}

// traceRuns returns runs whose traces are the given labels (one distinct
// output per label), for permutation examples.
func traceRuns(labels ...string) []metrics.Run {
	runs := make([]metrics.Run, len(labels))
	for i, l := range labels {
		runs[i] = metrics.Run{ID: fmt.Sprint(i), States: []string{"s"}, Tools: []string{"t"}, Calls: []metrics.Call{call("t", `{}`)}, Output: `"` + l + `"`}
	}
	return runs
}

// rrComparison runs Compare, as a report does, and returns its RR test.
func rrComparison(a, b []metrics.Run) (metrics.Comparison, error) {
	cs, err := metrics.Compare(a, b, metrics.CompareConfig{Permutations: 10000, Seed: 1})
	if err != nil {
		return metrics.Comparison{}, err
	}
	for _, c := range cs {
		if c.Quantity == metrics.QuantityRR {
			return c, nil
		}
	}
	return metrics.Comparison{}, fmt.Errorf("no RR comparison")
}

func docPermutation(w io.Writer) error {
	c, err := rrComparison(traceRuns("t1", "t1", "t2", "t3", "t4", "t5"), traceRuns("t1", "t1", "t1", "t1", "t1", "t2"))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "RR A %s, B %s, Δ = B − A = %s, p = %.4f (B = 10000, seed 1)\n", f3(c.ValueA), f3(c.ValueB), f3(c.Statistic), c.P.V)
	return nil
}

func docBH(w io.Writer) error {
	p := []float64{0.01, 0.04, 0.03, 0.20}
	adj, rej, err := metrics.BenjaminiHochberg(p)
	if err != nil {
		return err
	}
	for i := range p {
		fmt.Fprintf(w, "p %.2f  adjusted %.4f  significant %v\n", p[i], adj[i], rej[i])
	}
	return nil
}

// compareCells returns a baseline and a harness cell of eight runs each,
// paired by input and seed.
func compareCells() (base, harn []metrics.Run) {
	fetch := func(day string) metrics.Call {
		return call("fetch_rates", `{"base":"EUR","date":"2024-01-0`+day+`"}`)
	}
	calc := call("calculate", `{"amount":100}`)
	for i := 0; i < 8; i++ {
		key := fmt.Sprintf("input=%d/seed=0", i)
		// The baseline wanders: the date it asks for, an occasional extra
		// lookup, a free-text plan and an output that follows the date.
		day := fmt.Sprint(5 + i%3)
		calls := []metrics.Call{fetch(day), calc}
		if i%4 == 3 {
			calls = []metrics.Call{call("lookup", `{"q":"EUR"}`), fetch(day), calc}
		}
		base = append(base, metrics.Run{ID: "b" + fmt.Sprint(i), PairKey: key, Plan: fmt.Sprintf("fetch the rate of day %s, then convert", day),
			States: []string{"fetch", "calc", "answer"}, Tools: toolsOf(calls), Calls: calls, Output: `{"usd":10` + day + `}`,
			Success: i%3 != 2, Tokens: int64(6000 + 120*i), LatencyMS: float64(3000 + 150*(i%5))})
		// The harness pins the plan and the date; one run retries.
		hc := []metrics.Call{fetch("5"), calc}
		if i == 6 {
			hc = []metrics.Call{fetch("5"), fetch("5"), calc}
		}
		harn = append(harn, metrics.Run{ID: "h" + fmt.Sprint(i), PairKey: key, Plan: `[{"state":"fetch","tool":"fetch_rates"},{"state":"calc","tool":"calculate"}]`,
			States: []string{"fetch", "calc", "answer"}, Tools: toolsOf(hc), Calls: hc, Output: `{"usd":105}`,
			Success: true, Tokens: int64(3100 + 40*i), LatencyMS: float64(2900 + 200*(i%4))})
	}
	return base, harn
}

func docCompare(w io.Writer) error {
	base, harn := compareCells()
	cs, err := metrics.Compare(base, harn, metrics.CompareConfig{CellA: "baseline", CellB: "harness", Seed: 1})
	if err != nil {
		return err
	}
	metrics.AdjustBH(cs)
	num := func(v metrics.Value, decimals int) string {
		if !v.Valid {
			return "—"
		}
		return fmt.Sprintf("%.*f", decimals, v.V)
	}
	fmt.Fprintln(w, "quantity   test                A      B   B − A statistic       p  p (BH)      δ  verdict")
	for _, c := range cs {
		d := 3 // rates and metrics; tokens and milliseconds are whole
		if c.Quantity == metrics.QuantityTokens || c.Quantity == metrics.QuantityLatency {
			d = 0
		}
		verdict := "n.s."
		if c.Significant {
			verdict = "significant"
		}
		fmt.Fprintf(w, "%-10s %-14s %6s %6s %6s %9s %7.4f %7.4f %6s  %s\n", c.Quantity, c.Test, num(c.ValueA, d), num(c.ValueB, d), num(c.Difference, d),
			num(c.Statistic, max(d, 1)), c.P.V, c.PAdjusted.V, num(c.EffectSize, 3), verdict)
	}
	return nil
}

func docSampled(w io.Writer) error {
	// 1500 runs whose tool sequences (3 to 8 steps from 5 tools, drawn by a
	// fixed linear congruential generator) are nearly all distinct: above
	// the exact threshold set here (500), TSS is estimated.
	tools := []string{"lookup", "fetch_rates", "calculate", "validate_data", "generate_report"}
	runs := make([]metrics.Run, 1500)
	x := uint32(1)
	next := func(n int) int {
		x = x*1664525 + 1013904223
		return int(x>>16) % n
	}
	for i := range runs {
		seq := make([]string, 3+next(6))
		for j := range seq {
			seq[j] = tools[next(len(tools))]
		}
		runs[i] = metrics.Run{Tools: seq}
	}
	exact, err := metrics.ComputeCell(runs, metrics.Options{})
	if err != nil {
		return err
	}
	sampled, err := metrics.ComputeCell(runs, metrics.Options{MaxExactDistinct: 500, Seed: 7})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "distinct tool sequences %d of %d runs\n", exact.DistinctToolSeqs, exact.N)
	fmt.Fprintf(w, "exact    TSS %.4f  jackknife SE %.4f  estimated %v\n", exact.TSS.Value.V, exact.TSS.SE.V, exact.TSS.Estimated)
	fmt.Fprintf(w, "sampled  TSS %.4f  jackknife SE %.4f  estimated %v  sampling SE %.4f\n", sampled.TSS.Value.V, sampled.TSS.SE.V, sampled.TSS.Estimated, sampled.TSS.SamplingSE.V)
	fmt.Fprintf(w, "|sampled − exact| %.4f\n", math.Abs(sampled.TSS.Value.V-exact.TSS.Value.V))
	return nil
}

// docSEByN shows how the jackknife SE of an agreement shrinks with N for
// one mixture: 70% of the runs share a trace, the rest are all distinct.
func docSEByN(w io.Writer) error {
	for _, n := range []int{4, 10, 20, 50, 100, 1000} {
		modal := int64(math.Round(0.7 * float64(n)))
		counts := []int64{modal}
		for i := modal; i < int64(n); i++ {
			counts = append(counts, 1)
		}
		e := metrics.AgreementEstimate(counts)
		// The error a binomial over N(N−1)/2 independent pairs would claim.
		pairs := float64(n*(n-1)) / 2
		naive := math.Sqrt(e.Value.V * (1 - e.Value.V) / pairs)
		fmt.Fprintf(w, "N %4d  modal %3d  A %s  SE %s  (pairs as independent: %.3f)\n", n, modal, f3(e.Value), f3(e.SE), naive)
	}
	return nil
}

// pad pads s with spaces to n characters (runes, not bytes).
func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}

// docSmallestP: the smallest p each test can reach when the two cells
// differ as much as they can, by cell size.
func docSmallestP(w io.Writer) error {
	for _, n := range []int{3, 4, 5} {
		p, err := metrics.FisherExact(n, 0, 0, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s p %.4f\n", pad(fmt.Sprintf("Fisher, %d/%d against 0/%d successes", n, n, n), 44), p)
	}
	for _, d := range []int{5, 6} {
		p, err := metrics.McNemarExact(0, d)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s p %.4f\n", pad(fmt.Sprintf("McNemar, %d discordant pairs, all one way", d), 44), p)
	}
	for _, n := range []int{3, 4} {
		var x, y []float64
		for i := 0; i < n; i++ {
			x, y = append(x, float64(i)), append(y, float64(n+i))
		}
		r, err := metrics.MannWhitneyU(x, y)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s p %.4f\n", pad(fmt.Sprintf("Mann–Whitney, %d against %d values, no overlap", n, n), 44), r.P)
	}
	for _, n := range []int{3, 4} {
		var a, b []string
		for i := 0; i < n; i++ {
			a, b = append(a, fmt.Sprint("t", i)), append(b, "same")
		}
		c, err := rrComparison(traceRuns(a...), traceRuns(b...))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s p %.4f\n", pad(fmt.Sprintf("permutation, RR 0 against 1, %d and %d runs", n, n), 44), c.P.V)
	}
	return nil
}

// docPath is the metric reference, relative to this package.
const docPath = "../docs/metrics.md"

// checkedBlocks returns, for every `<!-- checked: NAME -->` line of doc, the
// content of the fenced block that follows it.
func checkedBlocks(doc string) (map[string]string, error) {
	const marker = "<!-- checked: "
	blocks := map[string]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), marker)
		if !ok {
			continue
		}
		name = strings.TrimSpace(strings.TrimSuffix(name, "-->"))
		if _, dup := blocks[name]; dup {
			return nil, fmt.Errorf("%s:%d: %q checked twice", docPath, i+1, name)
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: no fenced block after the %q marker", docPath, i+1, name)
		}
		var body []string
		j := i + 2
		for ; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block of %q is not closed", docPath, i+2, name)
		}
		blocks[name] = strings.Join(body, "\n") + "\n"
		i = j
	}
	return blocks, nil
}
