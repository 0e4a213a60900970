package analysis

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// Context is the context-management section of a study with context-managed (coding) runs:
// per model, tier and budget the runs' success, overflow, peak context, cost, mechanism
// invocations, recall usage, turns and re-patches, with the determinism metrics of the cells
// in the group; and paired comparisons — each managed tier against T0 and planning on against
// off — of success (exact McNemar on runs paired by task, seed index and every other factor,
// Benjamini–Hochberg across the section) and of cost and turns (Mann–Whitney U, BH likewise).
type Context struct {
	Groups      []ContextGroup      `json:"groups"`
	Comparisons []ContextComparison `json:"comparisons"`
	// Skipped lists the comparisons whose runs could not be paired unambiguously.
	Skipped []SkippedComparison `json:"skipped,omitempty"`
}

// ContextGroup is one (model, tier, budget) of a study's context-managed runs. Means are per
// scored run; the determinism metrics are the mean over the group's cells of each cell's value
// (cells where it is undefined left out), each with the number of cells it rests on (null when
// none: a metric needs two scored runs in a cell).
type ContextGroup struct {
	Model       string  `json:"model"`
	Tier        string  `json:"tier"`
	Budget      int64   `json:"budget"`
	Cells       int     `json:"cells"`
	Runs        int     `json:"runs"`
	Successes   int     `json:"successes"`
	Overflows   int     `json:"overflows"`
	PeakContext float64 `json:"peak_context"` // mean of the runs' largest request, tokens
	Tokens      float64 `json:"tokens"`       // mean prompt + completion tokens (cost)
	Turns       float64 `json:"turns"`
	Repatches   float64 `json:"repatches"`
	Elisions    float64 `json:"elisions"`
	Summaries   float64 `json:"summaries"`
	Recalls     float64 `json:"recalls"`
	// RecallRuns counts the runs that called recall_event at least once.
	RecallRuns int           `json:"recall_runs"`
	RR         metrics.Value `json:"rr"`
	DI         metrics.Value `json:"di"`
	TSS        metrics.Value `json:"tss"`
	AC         metrics.Value `json:"ac"`
	RRCells    int           `json:"rr_cells"`
	DICells    int           `json:"di_cells"`
	TSSCells   int           `json:"tss_cells"`
	ACCells    int           `json:"ac_cells"`
}

// ContextComparison compares two settings of one factor for a model: A is the reference (T0,
// or planning off), B the other, on the runs paired across them (pairRuns). Success is compared
// pair by pair (Disc the discordant counts, exact McNemar); tokens and turns of the same runs as
// two samples (Mann–Whitney U, Cliff's delta of B over A), so that runs of settings where the
// factor is not switched (a budget without a planning-on condition) do not weigh on either side.
type ContextComparison struct {
	Model  string `json:"model"`
	Factor string `json:"factor"` // "tier" or "planning"
	// A and B name the settings; Scope what is held fixed besides the pairing (a budget for
	// tiers, a tier for planning).
	A           string        `json:"a"`
	B           string        `json:"b"`
	Scope       string        `json:"scope"`
	Pairs       int           `json:"pairs"`
	Disc        [2]int        `json:"discordant"` // [A succeeded and B not, B succeeded and A not]
	SuccessA    float64       `json:"success_a"`
	SuccessB    float64       `json:"success_b"`
	P           metrics.Value `json:"p"`
	PAdjusted   metrics.Value `json:"p_adjusted"`
	Significant bool          `json:"significant"`
	TokensA     float64       `json:"tokens_a"`
	TokensB     float64       `json:"tokens_b"`
	TokensP     metrics.Value `json:"tokens_p"`
	TokensQ     metrics.Value `json:"tokens_q"`
	TokensDelta metrics.Value `json:"tokens_cliffs_delta"`
	TurnsA      float64       `json:"turns_a"`
	TurnsB      float64       `json:"turns_b"`
	TurnsP      metrics.Value `json:"turns_p"`
	TurnsQ      metrics.Value `json:"turns_q"`
	TurnsDelta  metrics.Value `json:"turns_cliffs_delta"`
}

type contextRun struct {
	runSetting
	success, overflow            bool
	tokens, peak                 float64
	elisions, recalls, summaries int64
	turns, repatches             int64
}

var contextCols = []string{"task", "model", "condition", "seed_index", "success", "overflow", "tokens", "context_tier",
	"context_budget", "peak_context", "elisions", "recalls", "summaries", "turns", "repatches", "input_index", "components"}

// ComputeContext computes the context section of a study through q from its runs and the
// cells' metrics, or nil when the study has no context-managed run.
func ComputeContext(ctx context.Context, q Querier, study string, cells []Cell) (*Context, error) {
	runs, err := loadPairedRuns(ctx, q, queries.ReportContext, study, contextCols, func(c *row, s runSetting) contextRun {
		r := contextRun{runSetting: s}
		r.success, r.overflow, r.tokens, r.peak = c.bool(4), c.bool(5), c.float(6), c.float(9)
		r.elisions, r.recalls, r.summaries = c.int(10), c.int(11), c.int(12)
		r.turns, r.repatches = c.int(13), c.int(14)
		return r
	})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	out := &Context{Groups: contextGroups(runs, cells)}
	if out.Comparisons, out.Skipped, err = contextComparisons(runs); err != nil {
		return nil, err
	}
	return out, nil
}

type groupKey struct {
	model, tier string
	budget      int64
}

func contextGroups(runs []contextRun, cells []Cell) []ContextGroup {
	byKey := map[groupKey]*ContextGroup{}
	cellsOf := map[groupKey]map[CellKey]bool{}
	for _, r := range runs {
		k := groupKey{r.Model, r.tier, r.budget}
		g := byKey[k]
		if g == nil {
			g = &ContextGroup{Model: k.model, Tier: k.tier, Budget: k.budget}
			byKey[k], cellsOf[k] = g, map[CellKey]bool{}
		}
		cellsOf[k][r.CellKey] = true
		g.Runs++
		if r.success {
			g.Successes++
		}
		if r.overflow {
			g.Overflows++
		}
		if r.recalls > 0 {
			g.RecallRuns++
		}
		g.PeakContext += r.peak
		g.Tokens += r.tokens
		g.Turns += float64(r.turns)
		g.Repatches += float64(r.repatches)
		g.Elisions += float64(r.elisions)
		g.Summaries += float64(r.summaries)
		g.Recalls += float64(r.recalls)
	}
	keys := make([]groupKey, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.tier, b.tier), cmp.Compare(a.budget, b.budget))
	})
	out := make([]ContextGroup, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		n := float64(g.Runs)
		g.PeakContext /= n
		g.Tokens /= n
		g.Turns /= n
		g.Repatches /= n
		g.Elisions /= n
		g.Summaries /= n
		g.Recalls /= n
		var rr, di, tss, ac []float64
		for _, c := range cells {
			if !cellsOf[k][c.CellKey] {
				continue
			}
			g.Cells++
			m := c.Metrics
			for _, p := range []struct {
				dst *[]float64
				v   metrics.Value
			}{{&rr, m.RR.Value}, {&di, m.DI.Value}, {&tss, m.TSS.Value}, {&ac, m.AC.Value}} {
				if p.v.Valid {
					*p.dst = append(*p.dst, p.v.V)
				}
			}
		}
		g.RR, g.DI, g.TSS, g.AC = meanValue(rr), meanValue(di), meanValue(tss), meanValue(ac)
		g.RRCells, g.DICells, g.TSSCells, g.ACCells = len(rr), len(di), len(tss), len(ac)
		out = append(out, *g)
	}
	return out
}

func meanValue(xs []float64) metrics.Value {
	if len(xs) == 0 {
		return metrics.Value{}
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return metrics.Some(s / float64(len(xs)))
}

// contextComparisons: per model, each managed tier against T0 at each budget, and planning on
// against off in each tier; runs paired on task, input, seed index and every other part of
// their condition (pairRuns). A comparison whose pairing is ambiguous is skipped and listed.
func contextComparisons(runs []contextRun) ([]ContextComparison, []SkippedComparison, error) {
	type setting struct {
		factor, a, b, scope string
		pairOn              string                  // what the pair's runs differ in (pairRuns' factor)
		side                func(r *contextRun) int // 0: A, 1: B, -1: neither
	}
	var settings []setting
	tiers, budgets, models := map[string]bool{}, map[int64]bool{}, map[string]bool{}
	for _, r := range runs {
		tiers[r.tier], budgets[r.budget], models[r.Model] = true, true, true
	}
	for _, b := range slices.Sorted(mapKeys(budgets)) {
		for _, t := range slices.Sorted(mapKeys(tiers)) {
			if t == "T0" {
				continue
			}
			settings = append(settings, setting{factor: "tier", a: "T0", b: t, scope: fmt.Sprintf("budget %d", b), pairOn: factorTier,
				side: func(r *contextRun) int {
					switch {
					case r.budget != b:
						return -1
					case r.tier == "T0":
						return 0
					case r.tier == t:
						return 1
					}
					return -1
				}})
		}
	}
	for _, t := range slices.Sorted(mapKeys(tiers)) {
		settings = append(settings, setting{factor: "planning", a: "off", b: "on", scope: "tier " + t, pairOn: events.ComponentUpdatePlan,
			side: func(r *contextRun) int {
				switch {
				case r.tier != t:
					return -1
				case slices.Contains(r.components, events.ComponentUpdatePlan):
					return 1
				}
				return 0
			}})
	}
	var out []ContextComparison
	var skips []SkippedComparison
	for _, m := range slices.Sorted(mapKeys(models)) {
		for _, s := range settings {
			c := ContextComparison{Model: m, Factor: s.factor, A: s.a, B: s.b, Scope: s.scope}
			side := func(r *contextRun) int {
				if r.Model != m {
					return -1
				}
				return s.side(r)
			}
			pairs, err := pairRuns(runs, s.pairOn, func(r *contextRun) *runSetting { return &r.runSetting }, side)
			if sk, ok := skipped(err, m, s.factor, s.a, s.b, s.scope); ok {
				skips = append(skips, sk)
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("analysis: context: %w", err)
			}
			if len(pairs) == 0 {
				continue
			}
			c.Pairs = len(pairs)
			var sa, sb int
			var tokens, turns [2][]float64
			for _, p := range pairs {
				a, b := p[0], p[1]
				sa += countIf(a.success)
				sb += countIf(b.success)
				switch {
				case a.success && !b.success:
					c.Disc[0]++
				case !a.success && b.success:
					c.Disc[1]++
				}
				for i, r := range p {
					tokens[i] = append(tokens[i], r.tokens)
					turns[i] = append(turns[i], float64(r.turns))
				}
			}
			c.SuccessA, c.SuccessB = float64(sa)/float64(c.Pairs), float64(sb)/float64(c.Pairs)
			p, err := metrics.McNemarExact(c.Disc[0], c.Disc[1])
			if err != nil {
				return nil, nil, fmt.Errorf("analysis: context: %w", err)
			}
			c.P = metrics.Some(p)
			c.TokensA, c.TokensB = mean(tokens[0]), mean(tokens[1])
			c.TurnsA, c.TurnsB = mean(turns[0]), mean(turns[1])
			if mw, err := metrics.MannWhitneyU(tokens[1], tokens[0]); err == nil {
				c.TokensP, c.TokensDelta = metrics.Some(mw.P), metrics.Some(mw.CliffsDelta)
			}
			if mw, err := metrics.MannWhitneyU(turns[1], turns[0]); err == nil {
				c.TurnsP, c.TurnsDelta = metrics.Some(mw.P), metrics.Some(mw.CliffsDelta)
			}
			out = append(out, c)
		}
	}
	if err := adjustFamily(out, func(c *ContextComparison) (*metrics.Value, *metrics.Value, *bool) {
		return &c.P, &c.PAdjusted, &c.Significant
	}); err != nil {
		return nil, nil, err
	}
	if err := adjustFamily(out, func(c *ContextComparison) (*metrics.Value, *metrics.Value, *bool) { return &c.TokensP, &c.TokensQ, nil }); err != nil {
		return nil, nil, err
	}
	if err := adjustFamily(out, func(c *ContextComparison) (*metrics.Value, *metrics.Value, *bool) { return &c.TurnsP, &c.TurnsQ, nil }); err != nil {
		return nil, nil, err
	}
	return out, skips, nil
}

// adjustFamily applies Benjamini–Hochberg to the defined p-values field picks, writing the
// adjusted values (and rejections, when sig is not nil).
func adjustFamily(cs []ContextComparison, field func(c *ContextComparison) (p, q *metrics.Value, sig *bool)) error {
	var ps []float64
	var idx []int
	for i := range cs {
		if p, _, _ := field(&cs[i]); p.Valid {
			ps, idx = append(ps, p.V), append(idx, i)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	adj, rej, err := metrics.BenjaminiHochberg(ps)
	if err != nil {
		return fmt.Errorf("analysis: context: %w", err)
	}
	for j, i := range idx {
		_, q, sig := field(&cs[i])
		*q = metrics.Some(adj[j])
		if sig != nil {
			*sig = rej[j]
		}
	}
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func countIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mapKeys[K comparable, V any](m map[K]V) func(yield func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
