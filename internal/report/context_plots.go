package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ContextPlots renders the context section's figures as PNG: per model, the budget curve of
// each tier.
func (r *Report) ContextPlots() ([]Plot, error) {
	return renderFigures(r.budgetCurves())
}

// tierGlyphs are the tiers' markers, in tier order (colours follow the same order).
var tierGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

const budgetCurveCaption = "Left: each tier's success rate among its scored runs at each context-window budget; right: its overflow rate " +
	"(runs that ended because a request did not fit the window). One line per tier (colour and marker); the tiers' points at one budget " +
	"are spread a little sideways so that equal rates stay visible. A tier has a point only at the budgets it ran; the numbers are in " +
	"the budget-curve table above."

// budgetCurves draws, per model, each tier's success rate and overflow rate against the
// budget, side by side: one line per tier, the budgets as the X ticks.
func (r *Report) budgetCurves() ([]figure, error) {
	if r.Context == nil || len(r.Context.Groups) == 0 {
		return nil, nil
	}
	var models, tiers []string
	var budgets []int64
	for _, g := range r.Context.Groups {
		if !slices.Contains(models, g.Model) {
			models = append(models, g.Model)
		}
		if !slices.Contains(tiers, g.Tier) {
			tiers = append(tiers, g.Tier)
		}
		if !slices.Contains(budgets, g.Budget) {
			budgets = append(budgets, g.Budget)
		}
	}
	slices.Sort(tiers)
	slices.Sort(budgets)
	ticks := make([]plot.Tick, len(budgets))
	for i, b := range budgets {
		ticks[i] = plot.Tick{Value: float64(b), Label: strconv.FormatInt(b, 10)}
	}
	// Budgets grow by factors (32k, 64k, 128k), so the X axis is logarithmic. A margin of a
	// sixth of the budgets' log span (at least a factor 1.15) keeps the first and last points off
	// the axes; the tiers' points at one budget are spread over a factor of about 1.05.
	lo, hi := float64(budgets[0]), float64(budgets[len(budgets)-1])
	pad := math.Max(math.Pow(hi/lo, 1.0/6), 1.15)
	dodge := func(ti int) float64 {
		return math.Pow(1.05, (float64(ti)-float64(len(tiers)-1)/2)/float64(max(1, len(tiers)-1)))
	}
	var out []figure
	for _, m := range models {
		panels := [2]*plot.Plot{plot.New(), plot.New()}
		for i, title := range []string{"success rate", "overflow rate"} {
			p := panels[i]
			p.Title.Text = title
			p.X.Label.Text = "context-window budget (tokens, log scale)"
			p.Y.Label.Text = "share of scored runs"
			p.X.Scale = plot.LogScale{}
			p.X.Min, p.X.Max = lo/pad, hi*pad
			p.Y.Min, p.Y.Max = 0, 1
			p.X.Tick.Marker = plot.ConstantTicks(ticks)
			p.Add(plotter.NewGrid())
		}
		leg := newLegend()
		for ti, t := range tiers {
			var rates [2]plotter.XYs
			for _, g := range r.Context.Groups {
				if g.Model != m || g.Tier != t {
					continue
				}
				n, x := float64(g.Runs), float64(g.Budget)*dodge(ti)
				rates[0] = append(rates[0], plotter.XY{X: x, Y: float64(g.Successes) / n})
				rates[1] = append(rates[1], plotter.XY{X: x, Y: float64(g.Overflows) / n})
			}
			if len(rates[0]) == 0 {
				continue
			}
			for i, xys := range rates {
				slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
				l, sc, err := plotter.NewLinePoints(xys)
				if err != nil {
					return nil, err
				}
				l.Color, l.Width = plotutil.Color(ti), vg.Points(1.5)
				sc.Color, sc.Radius, sc.Shape = plotutil.Color(ti), vg.Points(3.5), tierGlyphs[ti%len(tierGlyphs)]
				panels[i].Add(l, sc)
				if i == 0 {
					leg.Add(t, l, sc)
				}
			}
		}
		out = append(out, figure{Plot: Plot{Title: "Budget curves per tier: " + m, Caption: budgetCurveCaption},
			p: panels[0], right: panels[1], legend: leg, w: 10 * vg.Inch, h: 4 * vg.Inch})
	}
	return out, nil
}
