package report

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot is one rendered figure.
type Plot struct {
	Title   string
	Caption string
	PNG     []byte
}

// conditionColors gives each condition of a report a stable colour.
func conditionColors(conds []string) map[string]color.Color {
	out := map[string]color.Color{}
	for i, c := range conds {
		out[c] = plotutil.Color(i)
	}
	return out
}

func (r *Report) conditions() []string {
	var out []string
	for _, c := range r.Metrics.Cells {
		if !slices.Contains(out, c.Condition) {
			out = append(out, c.Condition)
		}
	}
	return out
}

// Plots renders the report's figures as PNG.
func (r *Report) Plots() ([]Plot, error) {
	return renderFigures(r.figures())
}

// renderFigures renders figs as PNG, in order; err is the error of making them, returned as
// it is, so that a section's figures and their rendering read as one call.
func renderFigures(figs []figure, err error) ([]Plot, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Plot, 0, len(figs))
	for _, f := range figs {
		if f.PNG, err = f.render(); err != nil {
			return nil, err
		}
		out = append(out, f.Plot)
	}
	return out, nil
}

// figures are the report's plots before rendering.
func (r *Report) figures() ([]figure, error) {
	if len(r.Drift) > 0 {
		f, err := r.plotDrift()
		if err != nil {
			return nil, err
		}
		return []figure{f}, nil
	}
	if r.Metrics == nil || len(r.Metrics.Cells) == 0 {
		return nil, nil
	}
	var out []figure
	for _, mk := range []func() (figure, error){r.plotAgreement, r.plotTokens, r.plotLatency, r.plotActivity} {
		f, err := mk()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	div, err := r.plotDivergence()
	if err != nil {
		return nil, err
	}
	return append(out, div...), nil
}

// cellLabels are the Y tick labels, top to bottom in report order: gonum puts index 0 at the
// bottom, so the cells are reversed.
func (r *Report) cellOrder() ([]analysis.Cell, []string) {
	cells := slices.Clone(r.Metrics.Cells)
	slices.Reverse(cells)
	labels := make([]string, len(cells))
	for i, c := range cells {
		labels[i] = c.Task + " · " + c.Model + " · " + c.Condition
	}
	return cells, labels
}

// figure is a plot before rendering: its legend is kept apart from it, to be drawn in a
// column to the right of the plot, off the data (a legend inside the axes hid points and
// intervals under it).
type figure struct {
	Plot // its title and caption; PNG once rendered
	p    *plot.Plot
	// right, when set, is a second panel drawn beside p (each half of the plot's width),
	// sharing its legend.
	right  *plot.Plot
	legend plot.Legend
	// w and h are the plot's size; the legend's column widens the picture.
	w, h vg.Length
}

// newLegend is a figure's legend: entries from the top of its column.
func newLegend() plot.Legend {
	leg := plot.NewLegend()
	leg.Top = true
	leg.Left = true
	return leg
}

// legendPad separates the legend's column from the plot and the picture's edge.
const legendPad = 8

// layout places the plot and its legend on a canvas of the figure's whole size: the plot on
// the left, w × h, the legend in a column to its right.
func (f *figure) layout(c draw.Canvas) (plotArea, legendArea draw.Canvas) {
	plotArea = draw.Crop(c, 0, f.w-c.Size().X, 0, 0)
	legendArea = draw.Crop(c, f.w+vg.Points(legendPad), -vg.Points(legendPad), 0, -vg.Points(legendPad))
	return plotArea, legendArea
}

// size is the whole picture's: the plot and, when the legend has entries, its column.
func (f *figure) size() (vg.Length, vg.Length) {
	lw := f.legend.Rectangle(draw.Canvas{}).Size().X
	if lw == 0 {
		return f.w, f.h
	}
	return f.w + lw + 2*vg.Points(legendPad), f.h
}

func (f *figure) render() ([]byte, error) {
	w, h := f.size()
	cw, err := draw.NewFormattedCanvas(w, h, "png")
	if err != nil {
		return nil, fmt.Errorf("report: render plot: %w", err)
	}
	dc := draw.New(cw)
	plotArea, legendArea := f.layout(dc)
	if f.right != nil {
		half := f.w / 2
		f.right.Draw(draw.Crop(plotArea, half, 0, 0, 0))
		plotArea = draw.Crop(plotArea, 0, -half, 0, 0)
	}
	f.p.Draw(plotArea)
	f.legend.Draw(legendArea)
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: render plot: %w", err)
	}
	return buf.Bytes(), nil
}

func cellsHeight(n int) vg.Length { return vg.Length(90+22*n) * vg.Points(1) }

// swatch is a legend entry: a filled square of a colour.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{{X: r.Min.X, Y: r.Min.Y}, {X: r.Max.X, Y: r.Min.Y}, {X: r.Max.X, Y: r.Max.Y}, {X: r.Min.X, Y: r.Max.Y}})
}

type errPoints struct {
	plotter.XYs
	plotter.XErrors
}

// plotAgreement: RR and DI per cell with 95% intervals (±1.96 jackknife SE, clipped to [0, 1]).
func (r *Report) plotAgreement() (figure, error) {
	cells, labels := r.cellOrder()
	p := plot.New()
	leg := newLegend()
	clipped := 0
	p.Title.Text = "RR and DI per cell (95% interval: ±1.96 jackknife SE)"
	p.X.Label.Text = "agreement"
	p.X.Min, p.X.Max = 0, 1.02
	p.Add(plotter.NewGrid())
	for si, s := range []struct {
		name string
		get  func(m metrics.CellMetrics) metrics.Estimate
		off  float64
	}{
		{"RR", func(m metrics.CellMetrics) metrics.Estimate { return m.RR }, 0.15},
		{"DI", func(m metrics.CellMetrics) metrics.Estimate { return m.DI }, -0.15},
	} {
		var pts errPoints
		for i, c := range cells {
			e := s.get(c.Metrics)
			if !e.Value.Valid {
				continue
			}
			v := e.Value.V
			lo, hi := 0.0, 0.0
			if e.SE.Valid {
				lo, hi = min(1.96*e.SE.V, v), min(1.96*e.SE.V, 1-v)
				if l, h, _ := interval95(e); l <= -0.0005 || h >= 1.0005 {
					clipped++
				}
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: v, Y: float64(i) + s.off})
			pts.XErrors = append(pts.XErrors, struct{ Low, High float64 }{lo, hi})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return figure{}, err
		}
		sc.GlyphStyle.Color = plotutil.Color(si)
		sc.GlyphStyle.Shape = plotutil.Shape(si)
		sc.GlyphStyle.Radius = vg.Points(3)
		eb, err := plotter.NewXErrorBars(pts)
		if err != nil {
			return figure{}, err
		}
		eb.LineStyle.Color = plotutil.Color(si)
		p.Add(eb, sc)
		leg.Add(s.name, sc)
	}
	p.NominalY(labels...)
	caption := "Each cell's RR (share of run pairs with identical traces) and DI (mean agreement of tool sequences, state sequences and outputs), with 95% intervals from the leave-one-run-out jackknife."
	if clipped > 0 {
		caption += fmt.Sprintf(" %d of the intervals reach past 0 or 1 and are drawn clipped at the bound (the notes give them whole).", clipped)
	}
	return figure{Plot: Plot{Title: "Reproducibility Rate and Determinism Index", Caption: caption},
		p: p, legend: leg, w: 9 * vg.Inch, h: cellsHeight(len(cells))}, nil
}

func (r *Report) plotBoxes(title, axis string, get func(d dist) []float64) (figure, error) {
	cells, labels := r.cellOrder()
	colors := conditionColors(r.conditions())
	p := plot.New()
	leg := newLegend()
	p.Title.Text = title
	p.X.Label.Text = axis
	p.Add(plotter.NewGrid())
	legend := map[string]bool{}
	for i, c := range cells {
		vals := get(r.dists[c.CellKey])
		if len(vals) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(vg.Points(12), float64(i), plotter.Values(vals))
		if err != nil {
			return figure{}, err
		}
		b.Horizontal = true
		b.FillColor = colors[c.Condition]
		p.Add(b)
		if !legend[c.Condition] {
			legend[c.Condition] = true
			leg.Add(c.Condition, swatch{colors[c.Condition]})
		}
	}
	p.NominalY(labels...)
	return figure{p: p, legend: leg, w: 9 * vg.Inch, h: cellsHeight(len(cells))}, nil
}

func (r *Report) plotTokens() (figure, error) {
	f, err := r.plotBoxes("Tokens per run, by cell (colour: condition)", "prompt + completion tokens per run",
		func(d dist) []float64 { return d.tokens })
	f.Plot = Plot{Title: "Token distributions", Caption: "Box: quartiles and median; whiskers: 1.5 IQR; points: outliers. Every model call of a run counts, re-prompts and retries included."}
	return f, err
}

func (r *Report) plotLatency() (figure, error) {
	f, err := r.plotBoxes("Latency per run, by cell (colour: condition)", "milliseconds from run start to finish",
		func(d dist) []float64 { return d.latency })
	f.Plot = Plot{Title: "Latency distributions", Caption: "Box: quartiles and median; whiskers: 1.5 IQR; points: outliers."}
	return f, err
}

// plotActivity: harness interventions per run, per cell.
func (r *Report) plotActivity() (figure, error) {
	cells, labels := r.cellOrder()
	p := plot.New()
	leg := newLegend()
	p.Title.Text = "Harness activity per run"
	p.X.Label.Text = "events per run"
	p.Add(plotter.NewGrid())
	series := []struct {
		name string
		get  func(a metrics.Activity) metrics.Value
	}{
		{"retries", func(a metrics.Activity) metrics.Value { return a.RetriesPerRun }},
		{"plan re-prompts", func(a metrics.Activity) metrics.Value { return a.PlanRepromptsPerRun }},
		{"rejected tool calls", func(a metrics.Activity) metrics.Value { return a.RejectedToolCallsPerRun }},
		{"escalations", func(a metrics.Activity) metrics.Value { return a.EscalationsPerRun }},
	}
	w := vg.Points(4)
	for si, s := range series {
		vals := make(plotter.Values, len(cells))
		for i, c := range cells {
			vals[i] = s.get(c.Metrics.Harness).Or(0)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return figure{}, err
		}
		b.Horizontal = true
		b.Color = plotutil.Color(si)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(si)-1.5) * w
		p.Add(b)
		leg.Add(s.name, b)
	}
	p.NominalY(labels...)
	return figure{Plot: Plot{Title: "Retries and escalations", Caption: "Per run: retries scheduled, Structured Planning re-prompts, tool calls the harness rejected (schema, permission, budget), and escalations."},
		p: p, legend: leg, w: 9 * vg.Inch, h: cellsHeight(len(cells))}, nil
}

// plotDivergence draws, per task, the share of run pairs whose calls already differ at or
// before each step: where runs part ways.
func (r *Report) plotDivergence() ([]figure, error) {
	var tasks []string
	for _, c := range r.Metrics.Cells {
		if !slices.Contains(tasks, c.Task) {
			tasks = append(tasks, c.Task)
		}
	}
	colors := conditionColors(r.conditions())
	var models []string
	for _, c := range r.Metrics.Cells {
		if !slices.Contains(models, c.Model) {
			models = append(models, c.Model)
		}
	}
	var out []figure
	for _, t := range tasks {
		p := plot.New()
		leg := newLegend()
		p.Title.Text = "Divergence profile: " + t
		p.X.Label.Text = "step k (tool call index)"
		p.Y.Label.Text = "share of run pairs already differing"
		p.Y.Min, p.Y.Max = 0, 1
		p.Add(plotter.NewGrid())
		for _, c := range r.Metrics.Cells {
			if c.Task != t {
				continue
			}
			var xys plotter.XYs
			for k, v := range c.Metrics.Divergence {
				if v.Valid {
					xys = append(xys, plotter.XY{X: float64(k), Y: v.V})
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			l.Color = colors[c.Condition]
			l.Width = vg.Points(1.5)
			l.Dashes = plotutil.Dashes(slices.Index(models, c.Model))
			sc.Color = colors[c.Condition]
			sc.Shape = plotutil.Shape(slices.Index(models, c.Model))
			p.Add(l, sc)
			leg.Add(c.Model+" · "+c.Condition, l, sc)
		}
		out = append(out, figure{Plot: Plot{Title: "Where runs part ways: " + t, Caption: "Line colour: condition; dash and marker: model. A flat line at 0 means every run made the same calls."},
			p: p, legend: leg, w: 7 * vg.Inch, h: 4 * vg.Inch})
	}
	return out, nil
}

// plotDrift draws, per production cell, success, RR, DI, TSS and AC in the previous and the
// last window with 95% intervals (Wilson for success, ±1.96 jackknife SE for the others).
func (r *Report) plotDrift() (figure, error) {
	type row struct {
		label  string
		before metrics.CellMetrics
		after  metrics.CellMetrics
		get    func(m metrics.CellMetrics) (v, lo, hi metrics.Value)
	}
	est := func(f func(m metrics.CellMetrics) metrics.Estimate) func(m metrics.CellMetrics) (metrics.Value, metrics.Value, metrics.Value) {
		return func(m metrics.CellMetrics) (metrics.Value, metrics.Value, metrics.Value) {
			e := f(m)
			if !e.Value.Valid || !e.SE.Valid {
				return e.Value, e.Value, e.Value
			}
			return e.Value, metrics.Some(max(0, e.Value.V-1.96*e.SE.V)), metrics.Some(min(1, e.Value.V+1.96*e.SE.V))
		}
	}
	var rows []row
	for _, d := range r.Drift {
		base := d.Cell.Task + " · " + d.Cell.Model + " · "
		rows = append(rows,
			row{base + "success", d.A.Metrics, d.B.Metrics, func(m metrics.CellMetrics) (metrics.Value, metrics.Value, metrics.Value) {
				return m.Success.Rate, m.Success.WilsonLow, m.Success.WilsonHi
			}},
			row{base + "RR", d.A.Metrics, d.B.Metrics, est(func(m metrics.CellMetrics) metrics.Estimate { return m.RR })},
			row{base + "DI", d.A.Metrics, d.B.Metrics, est(func(m metrics.CellMetrics) metrics.Estimate { return m.DI })},
			row{base + "TSS", d.A.Metrics, d.B.Metrics, est(func(m metrics.CellMetrics) metrics.Estimate { return m.TSS })},
			row{base + "AC", d.A.Metrics, d.B.Metrics, est(func(m metrics.CellMetrics) metrics.Estimate { return m.AC })})
	}
	slices.Reverse(rows)
	p := plot.New()
	p.Title.Text = "Previous window against the last (95% intervals)"
	leg := newLegend()
	p.X.Min, p.X.Max = 0, 1.02
	p.Add(plotter.NewGrid())
	for si, side := range []struct {
		name string
		off  float64
		m    func(rw row) metrics.CellMetrics
	}{{"previous window", 0.15, func(rw row) metrics.CellMetrics { return rw.before }}, {"last window", -0.15, func(rw row) metrics.CellMetrics { return rw.after }}} {
		var pts errPoints
		for i, rw := range rows {
			v, lo, hi := rw.get(side.m(rw))
			if !v.Valid {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: v.V, Y: float64(i) + side.off})
			pts.XErrors = append(pts.XErrors, struct{ Low, High float64 }{v.V - lo.Or(v.V), hi.Or(v.V) - v.V})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return figure{}, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = plotutil.Color(si), plotutil.Shape(si), vg.Points(3)
		eb, err := plotter.NewXErrorBars(pts)
		if err != nil {
			return figure{}, err
		}
		eb.LineStyle.Color = plotutil.Color(si)
		p.Add(eb, sc)
		leg.Add(side.name, sc)
	}
	labels := make([]string, len(rows))
	for i, rw := range rows {
		labels[i] = rw.label
	}
	p.NominalY(labels...)
	return figure{Plot: Plot{Title: "Drift", Caption: "Each production cell's success rate and agreement metrics in the two windows (intervals reaching past 0 or 1 drawn clipped at the bound)."},
		p: p, legend: leg, w: 9 * vg.Inch, h: cellsHeight(len(rows))}, nil
}
