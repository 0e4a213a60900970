package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

// ContextTierTable is the context-management figures per model, tier and budget: success,
// overflow, peak context, cost, mechanism invocations, recall usage, turns and re-patches.
func (r *Report) ContextTierTable() Table {
	t := Table{ID: "context-tiers", Header: []string{"model", "tier", "budget", "cells", "runs", "success", "overflow", "peak context",
		"tokens", "turns", "re-patches", "elisions", "summaries", "recalls", "runs with recall"},
		Flag: map[int]bool{}}
	if r.Context == nil {
		return t
	}
	for i, g := range r.Context.Groups {
		n := float64(g.Runs)
		t.Rows = append(t.Rows, []string{g.Model, g.Tier, strconv.FormatInt(g.Budget, 10), fmt.Sprint(g.Cells), fmt.Sprint(g.Runs),
			num(metrics.Some(float64(g.Successes)/n), 2), num(metrics.Some(float64(g.Overflows)/n), 2),
			num(metrics.Some(g.PeakContext), 0), num(metrics.Some(g.Tokens), 0), num(metrics.Some(g.Turns), 1),
			num(metrics.Some(g.Repatches), 2), num(metrics.Some(g.Elisions), 2), num(metrics.Some(g.Summaries), 2),
			num(metrics.Some(g.Recalls), 2), fmt.Sprintf("%d/%d", g.RecallRuns, g.Runs)})
		if g.Tier != "T0" && g.Overflows > 0 {
			t.Flag[i] = true // a managed tier that overflowed
		}
	}
	return t
}

// ContextDeterminismTable is the determinism of each model, tier and budget: RR, DI, TSS and AC
// as the mean of the group's cells' values, each with the number of cells it rests on.
func (r *Report) ContextDeterminismTable() Table {
	t := Table{ID: "context-determinism", Header: []string{"model", "tier", "budget", "cells", "scored runs", "RR (cells)", "DI (cells)", "TSS (cells)", "AC (cells)"}}
	if r.Context == nil {
		return t
	}
	with := func(v metrics.Value, cells int) string { return fmt.Sprintf("%s (%d)", num(v, 3), cells) }
	for _, g := range r.Context.Groups {
		t.Rows = append(t.Rows, []string{g.Model, g.Tier, strconv.FormatInt(g.Budget, 10), fmt.Sprint(g.Cells), fmt.Sprint(g.Runs),
			with(g.RR, g.RRCells), with(g.DI, g.DICells), with(g.TSS, g.TSSCells), with(g.AC, g.ACCells)})
	}
	return t
}

// ContextBudgetTable is the budget curve of each tier: success (and overflow) per budget, one
// row per model and tier, one column per budget.
func (r *Report) ContextBudgetTable() Table {
	t := Table{ID: "context-budgets", Header: []string{"model", "tier"}}
	if r.Context == nil {
		return t
	}
	var budgets []int64
	for _, g := range r.Context.Groups {
		if !slices.Contains(budgets, g.Budget) {
			budgets = append(budgets, g.Budget)
		}
	}
	slices.Sort(budgets)
	for _, b := range budgets {
		t.Header = append(t.Header, fmt.Sprintf("success (overflow) at %d", b))
	}
	row := map[[2]string][]string{}
	var keys [][2]string
	for _, g := range r.Context.Groups {
		k := [2]string{g.Model, g.Tier}
		if row[k] == nil {
			row[k] = make([]string, len(budgets))
			for i := range row[k] {
				row[k][i] = nullText
			}
			keys = append(keys, k)
		}
		n := float64(g.Runs)
		row[k][slices.Index(budgets, g.Budget)] = num(metrics.Some(float64(g.Successes)/n), 2) + " (" + num(metrics.Some(float64(g.Overflows)/n), 2) + ")"
	}
	for _, k := range keys {
		t.Rows = append(t.Rows, append([]string{k[0], k[1]}, row[k]...))
	}
	return t
}

// ContextComparisonTable is the section's paired comparisons: success by exact McNemar, cost
// and turns by Mann–Whitney, each family adjusted by Benjamini–Hochberg.
func (r *Report) ContextComparisonTable() Table {
	t := Table{ID: "context-comparisons", Header: []string{"model", "factor", "A", "B", "held", "pairs", "success A", "success B", "b (A ok, B not)",
		"c (B ok, A not)", "p", "q", "tokens A → B", "q (tokens)", "δ tokens", "turns A → B", "q (turns)", "δ turns"}, Flag: map[int]bool{}}
	if r.Context == nil {
		return t
	}
	for i, c := range r.Context.Comparisons {
		if c.Significant && c.SuccessB < c.SuccessA {
			t.Flag[i] = true
		}
		t.Rows = append(t.Rows, []string{c.Model, c.Factor, c.A, c.B, c.Scope, fmt.Sprint(c.Pairs),
			num(metrics.Some(c.SuccessA), 2), num(metrics.Some(c.SuccessB), 2), fmt.Sprint(c.Disc[0]), fmt.Sprint(c.Disc[1]),
			pValue(c.P), pValue(c.PAdjusted),
			num(metrics.Some(c.TokensA), 0) + " → " + num(metrics.Some(c.TokensB), 0), pValue(c.TokensQ), num(c.TokensDelta, 2),
			num(metrics.Some(c.TurnsA), 1) + " → " + num(metrics.Some(c.TurnsB), 1), pValue(c.TurnsQ), num(c.TurnsDelta, 2)})
	}
	return t
}

const contextIntro = "Context management: per model, tier and budget, the share of scored runs that succeeded and that overflowed " +
	"the context window, the mean peak request (tokens, as the harness estimates it), prompt + completion tokens, the agent's turns, " +
	"re-patches and the invocations of each mechanism per run (elision M1, summarization M3, recall M2). " +
	"A managed tier that overflowed is highlighted."

const contextDeterminismIntro = "Determinism per tier: RR (identical traces), DI, TSS (over tool sequences) and AC (argument consistency) " +
	"of each model, tier and budget, the mean over the group's cells of each cell's value; in brackets the number of cells it rests on " +
	"(a cell's metric needs at least 2 scored runs); — where no cell defines it. A cell is one task under one condition, and the metrics " +
	"compare runs within a cell only; a group pools every cell of its model at that tier and budget, whatever else the condition " +
	"switches (planning on and off, file tools and bash, other components), and the cells column counts them."

const contextBudgetIntro = "Budget curve of each tier: success rate (overflow rate) at each context-window budget."

const contextBudgetPlotNote = "The budget curves are plotted in the HTML report."

const contextComparisonIntro = "Paired comparisons: each managed tier against T0 at the same budget, and planning on (B) against " +
	"off (A) within a tier; runs paired on task, input, seed index and every other part of their condition. Success: exact McNemar on the " +
	"discordant pairs; tokens and turns of the same runs: Mann–Whitney U (δ is Cliff's delta of B over A); q is Benjamini–Hochberg across " +
	"each column of this table."

// skippedLines says which of a section's paired comparisons were not made, and why.
func skippedLines(skips []analysis.SkippedComparison) []string {
	out := make([]string, 0, len(skips))
	for _, s := range skips {
		scope := ""
		if s.Scope != "" {
			scope = ", " + s.Scope
		}
		out = append(out, fmt.Sprintf("%s: %s %s against %s%s not compared: %s.", s.Model, s.Factor, s.B, s.A, scope, s.Reason))
	}
	return out
}
