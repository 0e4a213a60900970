package console

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// driftWindows is how many consecutive windows of equal length the drift chart splits a
// production study's span of run starts into.
const driftWindows = 8

// driftChart is a production study's drift over time: per (task, model), its releases pooled,
// the metrics of consecutive windows of run start times, drawn as lines (success rate, RR, DI:
// each in [0, 1]) and listed in a table.
type driftChart struct {
	Windows []driftWindow // the windows' bounds, shared by every series
	Series  []driftSeries
}

type driftWindow struct {
	From, To string // RFC 3339 (nanoseconds where there are any), UTC
	Label    string // the window's start, short
}

type driftSeries struct {
	Task, Model string
	Points      []driftPoint
	Lines       []driftLine
}

// driftPoint is one window of a series: its run count and metrics as the report prints them
// ("—" for a window without enough runs).
type driftPoint struct {
	N                        int
	Success, RR, DI, TSS     string
	SuccessY, RRY, DIY, X    int // chart coordinates; Y < 0 when the value is null
	HasSuccess, HasRR, HasDI bool
}

// driftLine is one metric of a series drawn as an SVG polyline (points where the value is
// defined).
type driftLine struct {
	Name, Class, Points string
}

// The chart's geometry, in SVG units: the plot spans x in [driftLeft, driftLeft+driftWidth]
// and y in [driftTop, driftTop+driftHeight], 1 at the top.
const (
	driftLeft, driftWidth = 40, 640
	driftTop, driftHeight = 10, 160
)

// computeDrift computes the drift chart of a study (nil when it has no run).
func (c *Console) computeDrift(ctx context.Context, study string) (*driftChart, error) {
	rows, _, err := c.rd.query(ctx, queries.ConsoleDriftCells, study)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	first, last := integer(rows[0][3]), integer(rows[0][4])
	for _, r := range rows {
		first, last = min(first, integer(r[3])), max(last, integer(r[4]))
	}
	windows := splitSpan(time.UnixMicro(first).UTC(), time.UnixMicro(last+1).UTC(), driftWindows)
	ch := &driftChart{}
	layout := labelLayout(windows[0].To.Sub(windows[0].From))
	for _, w := range windows {
		ch.Windows = append(ch.Windows, driftWindow{From: w.From.Format(time.RFC3339Nano), To: w.To.Format(time.RFC3339Nano),
			Label: w.From.Format(layout)})
	}
	for _, r := range rows {
		cell := analysis.CellFilter{Study: study, Task: str(r[0]), Model: str(r[1])}
		cells, err := analysis.WindowSeriesFrom(ctx, c.rd, cell, windows, c.cfg.Analysis)
		if err != nil {
			return nil, fmt.Errorf("console: drift of %s: %w", cell, err)
		}
		ch.Series = append(ch.Series, driftSeriesOf(cell, cells))
	}
	return ch, nil
}

// labelLayout is how a window's start is labelled: precise enough that windows of length d
// read apart.
func labelLayout(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return "2006-01-02"
	case d >= time.Minute:
		return "01-02 15:04"
	case d >= time.Second:
		return "15:04:05"
	}
	return "15:04:05.000000"
}

// splitSpan splits [from, to) into n windows of equal length (one when the span is too short).
func splitSpan(from, to time.Time, n int) []analysis.Window {
	step := to.Sub(from) / time.Duration(n)
	if step < time.Microsecond {
		return []analysis.Window{{From: from, To: to}}
	}
	out := make([]analysis.Window, n)
	for i := range out {
		out[i] = analysis.Window{From: from.Add(time.Duration(i) * step), To: from.Add(time.Duration(i+1) * step)}
	}
	out[n-1].To = to
	return out
}

func driftSeriesOf(cell analysis.CellFilter, cells []analysis.WindowCell) driftSeries {
	s := driftSeries{Task: cell.Task, Model: cell.Model}
	var succ, rr, di []string
	for i, wc := range cells {
		m := wc.Metrics
		p := driftPoint{N: m.N, Success: report.Number(m.Success.Rate, 2), RR: report.Number(m.RR.Value, 2),
			DI: report.Number(m.DI.Value, 2), TSS: report.Number(m.TSS.Value, 2), X: driftX(i, len(cells))}
		if m.N == 0 {
			p.Success = report.Number(metrics.Null, 2)
		}
		p.SuccessY, p.HasSuccess = driftY(m.Success.Rate)
		p.RRY, p.HasRR = driftY(m.RR.Value)
		p.DIY, p.HasDI = driftY(m.DI.Value)
		if m.N == 0 {
			p.HasSuccess = false
		}
		if p.HasSuccess {
			succ = append(succ, strconv.Itoa(p.X)+","+strconv.Itoa(p.SuccessY))
		}
		if p.HasRR {
			rr = append(rr, strconv.Itoa(p.X)+","+strconv.Itoa(p.RRY))
		}
		if p.HasDI {
			di = append(di, strconv.Itoa(p.X)+","+strconv.Itoa(p.DIY))
		}
		s.Points = append(s.Points, p)
	}
	s.Lines = []driftLine{
		{Name: "success rate", Class: "success", Points: strings.Join(succ, " ")},
		{Name: "RR", Class: "rr", Points: strings.Join(rr, " ")},
		{Name: "DI", Class: "di", Points: strings.Join(di, " ")},
	}
	return s
}

// driftX is the x of window i of n: the middle of its slot.
func driftX(i, n int) int { return driftLeft + (2*i+1)*driftWidth/(2*n) }

// driftY is the y of a value in [0, 1], and whether it is defined.
func driftY(v metrics.Value) (int, bool) {
	if !v.Valid {
		return -1, false
	}
	x := min(max(v.V, 0), 1)
	return driftTop + int((1-x)*driftHeight+0.5), true
}
