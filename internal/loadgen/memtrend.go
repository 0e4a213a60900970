package loadgen

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Memory verdicts (Memory.Verdict).
const (
	// MemBounded: the process's RSS levelled off while the load went on, and the run says so
	// beyond its noise (see BoundedRatio, FlatSlope and the interval below).
	MemBounded = "bounded"
	// MemGrowing: the RSS still grew in the second half of publishing at more than a quarter of
	// the first half's pace (and faster than FlatSlope), beyond the run's noise.
	MemGrowing = "growing"
	// MemUnresolved: the run cannot tell: the RSS's swings make the second half's slope too
	// uncertain to put it on either side of the line between bounded and growing. A longer run
	// narrows the interval (the report gives its half-width).
	MemUnresolved = "unresolved"
	// MemUnknown: too few RSS samples (or floors) in a half of the time judged to fit a trend.
	MemUnknown = "unknown"
)

// The memory verdict's criterion. The RSS of each watched process is sampled every
// Config.Sample; the publishing time is cut into windows of TrendWindow (into TrendWindows
// windows when it is shorter than TrendWindows of them), and of each span of two consecutive
// windows (60 s, one starting every 30 s) the largest and the smallest sample are kept: the
// peaks and the floors of the RSS. A least-squares line is fitted to the peaks of each half of
// the publishing time (the spans whose middle is in it), and another to the floors.
// With s1 and s2 the slopes of the first and the second half, in MiB/min, and ±h the 95%
// interval of s2 (below), a series is
//
//	bounded     when s2 + h <= L
//	growing     when s2 - h >  L        where L = max(FlatSlope, BoundedRatio * s1)
//	unresolved  otherwise,
//
// and the memory is growing when its peaks or its floors are, bounded when both are, and
// unresolved otherwise. The samples in a release of the process's (Release: the analyzer's
// reattaches, told afterwards by Report.JudgeMemory) count towards the peaks only.
//
// Why: at a constant event rate, memory that grows with the data handled (a leak, an index of
// every subject or message id, a cache without a limit) grows by the same amount in each half,
// s2 ≈ s1, and fails. Memory that fills up to a size of its own (buffer pools, batches, caches
// with limits, the Go heap up to its GC goal) grows in the first half and levels off: s2 ≪ s1.
// A quarter is the line between them: if the approach to the plateau is exponential, the
// growth per half shrinks by the factor r = s2/s1 each half, so the growth still to come after
// the run is at most s2·(half)·r/(1−r) — a third of the second half's growth when r = 1/4 —
// and a fill whose time constant is up to ~0.36 of the duration (1.8 min in a 5-minute run)
// passes; square-root growth (r ≈ 0.5 for fitted slopes), which has no plateau, fails.
// FlatSlope covers the process that was at its plateau before the load began (s1 ≈ s2 ≈ 0,
// their ratio noise). The verdict is no proof of boundedness for days (1 MiB/min is 1.4 GiB a
// day): the slopes are reported beside it so that a reader can extrapolate.
//
// The interval: a slope fitted to a few minutes of a process whose peaks swing by tens of MiB
// (the analyzer's, by ±25 MiB from one 30-second window to the next: its Go heap holds one or
// two batches of messages, DuckDB's buffer fills between checkpoints) is uncertain by more than
// FlatSlope, and a verdict read from its sign alone was bounded in one 5-minute run and growing
// in the next, on the same build. h is the half-width of the slope's 95% interval: Student's t
// quantile for n−2 degrees of freedom times the slope's standard error from the residuals of
// the fit, times √2 because consecutive spans share a window (their peaks are correlated; for
// neighbours that share half their samples, the variance of the slope about doubles). Memory
// without swings (a steady leak, a smooth fill) fits its line closely, h ≈ 0, and its verdict
// is the one the slopes alone give.
//
// Peaks and floors, not the samples themselves: a process whose memory fills and empties in
// cycles of tens of seconds (the analyzer's DuckDB buffer, 12 to 244 MiB between checkpoints
// every 20 to 40 s at 20,000 events/s) has, over a half of only a few cycles, a least-squares
// slope that depends on where the cycles start and end: bounded sawtooths of 230 MiB gave
// slopes of +40 then +13 MiB/min, "growing", for one phase in five. The peaks of spans
// longer than a cycle do not move with the phase, and a leak raises them and the floors alike;
// a cycle whose peak grows with the data (a checkpoint that costs more as the table grows)
// raises the peaks, a leak under large cycles the floors. For memory without cycles the peaks
// and floors are the samples, and the verdict is the one the samples' slopes give.
const (
	BoundedRatio = 0.25
	FlatSlope    = 1.0 // MiB/min
	// TrendWindow is the length of the windows a run's publishing time is cut into: a longer
	// run has more of them, and a narrower interval.
	TrendWindow = 30 * time.Second
	// TrendWindows is the fewest windows: a run shorter than TrendWindows × TrendWindow is
	// cut into TrendWindows windows of a tenth of it.
	TrendWindows = 10
	// MinTrendSamples is the fewest spans of two windows with samples a half of the
	// publishing time needs for a verdict.
	MinTrendSamples = 5
)

// trendWindows is how many windows a publishing time of dur is cut into.
func trendWindows(dur time.Duration) int {
	return max(TrendWindows, int(dur/TrendWindow))
}

// Release is a span of time, since the first publish, in which a watched process let go of
// memory on purpose, at a moment known to lie in (From, To]: the analyzer's reattach, which
// detaches its DuckDB database and attaches it again, and drops its RSS by about 200 MiB for
// one fill of DuckDB's buffer (docs/benchmarks.md, twenty-sixth session). The process tells
// when (the analyzer in its stats lines), the load generator does not know it:
// Report.JudgeMemory takes the releases afterwards.
type Release struct {
	From time.Duration `json:"from"`
	To   time.Duration `json:"to"`
}

// ReleaseRefill is how long after a Release its process's RSS is left out of the floors: the
// dip of a reattach lasts about one cycle of DuckDB's buffer (it fills and is checkpointed
// every 20 to 40 s at 20,000 events/s), and TrendWindow's 30 s cover most of it.
//
// Why leave it out: a floor is there to see a leak under the buffer's cycles, and a span that
// holds a reattach has a floor 150 to 200 MiB below its neighbours' whatever the process's
// trend, since the reattach returns what DuckDB had appended since the last. With a reattach
// every two to three minutes, a few such spans in each half make the floors' slope uncertain by
// ±9 MiB/min over 30 minutes (the peaks': ±3). A leak raises the floors between the reattaches
// as much as it raises them anywhere, and the peaks keep every sample.
const ReleaseRefill = TrendWindow

// loadTime is how long the load was applied of a publishing time of dur: all of it, unless the
// stream stopped storing events more than a TrendWindow before publishing ended while events
// were still published (the server refused them: a full disk, a stream at its limits), when it
// is until the last sample at which the stream still grew. The processes' memory is judged
// over it: an idle process after the load stopped says nothing of the memory under it. Samples
// missing at the end (the stream could not be asked) shorten nothing: the samples after the
// last growth must show the publisher going on.
func loadTime(samples []Sample, dur time.Duration) time.Duration {
	last := -1 // the last sample at which the stream held more than at the one before
	for i := 1; i < len(samples) && samples[i].At <= dur; i++ {
		if samples[i].Stored > samples[i-1].Stored {
			last = i
		}
	}
	if last < 0 || samples[last].At >= dur-TrendWindow {
		return dur
	}
	// Published after the last growth, within publishing.
	end := last
	for end+1 < len(samples) && samples[end+1].At <= dur {
		end++
	}
	if samples[end].Published <= samples[last].Published {
		return dur
	}
	return samples[last].At
}

// memoryTrend fills in m's RSS figures and verdict from the samples of the process m.Name taken
// while the load was applied (0 < At <= dur: loadTime). The samples in a release (From, To+ReleaseRefill]
// count towards the peaks only.
func memoryTrend(m Memory, samples []Sample, dur time.Duration, releases []Release) Memory {
	type point struct {
		at       time.Duration
		kib      int64
		released bool // in a release: not a floor
	}
	var pts []point
	for _, s := range samples {
		kib, ok := s.RSS[m.Name]
		if ok && s.At > 0 && s.At <= dur {
			p := point{at: s.At, kib: kib}
			for _, r := range releases {
				if s.At > r.From && s.At <= r.To+ReleaseRefill {
					p.released = true
				}
			}
			if p.released {
				m.FloorSamplesLeftOut++
			}
			pts = append(pts, p)
		}
	}
	m.Releases = len(releases)
	m.JudgedOver = dur
	if len(pts) == 0 {
		m.Verdict = MemUnknown
		return m
	}
	nearest := func(at time.Duration) int64 {
		best := pts[0]
		for _, p := range pts[1:] {
			if absDur(p.at-at) < absDur(best.at-at) {
				best = p
			}
		}
		return best.kib
	}
	m.StartKiB = pts[0].kib
	m.QuarterKiB = nearest(dur / 4)
	m.HalfKiB = nearest(dur / 2)
	m.EndKiB = pts[len(pts)-1].kib
	// The peak and the floor of each window, then of each span of two consecutive windows
	// that has samples, at the span's middle.
	type window struct {
		has, hasLow bool
		peak, low   int64
	}
	nw := trendWindows(dur)
	wins := make([]window, nw)
	for _, p := range pts {
		// Window i holds the samples in (i, i+1] × dur/nw.
		i := min(max(int((int64(p.at)*int64(nw)+int64(dur)-1)/int64(dur))-1, 0), nw-1)
		w := &wins[i]
		if !w.has {
			w.has, w.peak = true, p.kib
		}
		w.peak = max(w.peak, p.kib)
		if !p.released {
			if !w.hasLow {
				w.hasLow, w.low = true, p.kib
			}
			w.low = min(w.low, p.kib)
		}
	}
	// A span's floor is the smaller of its windows' floors outside releases; a span with none
	// has no floor.
	var x1, peak1, x2, peak2, lx1, low1, lx2, low2 []float64
	for i := 1; i < nw; i++ {
		a, b := wins[i-1], wins[i]
		if !a.has || !b.has {
			continue
		}
		x := (time.Duration(i) * dur / time.Duration(nw)).Minutes()
		peak := float64(max(a.peak, b.peak)) / 1024
		if 2*i <= nw {
			x1, peak1 = append(x1, x), append(peak1, peak)
		}
		if 2*i >= nw {
			x2, peak2 = append(x2, x), append(peak2, peak)
		}
		var low int64
		switch {
		case a.hasLow && b.hasLow:
			low = min(a.low, b.low)
		case a.hasLow:
			low = a.low
		case b.hasLow:
			low = b.low
		default:
			continue
		}
		if 2*i <= nw {
			lx1, low1 = append(lx1, x), append(low1, float64(low)/1024)
		}
		if 2*i >= nw {
			lx2, low2 = append(lx2, x), append(low2, float64(low)/1024)
		}
	}
	m.FirstSlope, m.SecondSlope = slope(x1, peak1), slope(x2, peak2)
	m.FirstFloorSlope, m.SecondFloorSlope = slope(lx1, low1), slope(lx2, low2)
	m.SecondSlopeHalfWidth, m.SecondFloorSlopeHalfWidth = slopeHalfWidth(x2, peak2), slopeHalfWidth(lx2, low2)
	m.FirstSpans, m.SecondSpans, m.FirstFloorSpans, m.SecondFloorSpans = len(x1), len(x2), len(lx1), len(lx2)
	m.Verdict = m.verdict()
	return m
}

// verdict is the memory verdict of m's slopes, half-widths and spans: growing when its peaks or
// its floors are, bounded when both are, unresolved otherwise (the criterion above).
func (m Memory) verdict() string {
	peaks := memoryVerdict(m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.FirstSpans, m.SecondSpans)
	floors := memoryVerdict(m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.FirstFloorSpans, m.SecondFloorSpans)
	switch {
	case peaks == MemUnknown || floors == MemUnknown:
		return MemUnknown
	case peaks == MemGrowing || floors == MemGrowing:
		return MemGrowing
	case peaks == MemBounded && floors == MemBounded:
		return MemBounded
	}
	return MemUnresolved
}

// memoryVerdict applies the criterion above to the slopes of the two halves (MiB/min) fitted
// to n1 and n2 samples, the second's 95% interval being ±h2.
func memoryVerdict(s1, s2, h2 float64, n1, n2 int) string {
	limit := max(FlatSlope, BoundedRatio*s1)
	switch {
	case n1 < MinTrendSamples || n2 < MinTrendSamples:
		return MemUnknown
	case s2+h2 <= limit:
		return MemBounded
	case s2-h2 > limit:
		return MemGrowing
	default:
		return MemUnresolved
	}
}

// slopeHalfWidth is the half-width of the 95% interval of the least-squares slope of y over x
// (the criterion above): Student's t quantile for n−2 degrees of freedom times the slope's
// standard error, times √2 for the overlap of the spans. It is 0 with fewer than three points.
func slopeHalfWidth(x, y []float64) float64 {
	n := len(x)
	if n < 3 {
		return 0
	}
	b := slope(x, y)
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxx, rss float64
	for i := range x {
		dx := x[i] - mx
		sxx += dx * dx
		r := y[i] - my - b*dx
		rss += r * r
	}
	if sxx == 0 {
		return 0
	}
	se := math.Sqrt(rss/float64(n-2)) / math.Sqrt(sxx)
	return t975(n-2) * se * math.Sqrt2
}

// t975 is Student's t quantile at 0.975 for df degrees of freedom: a 95% interval's half-width
// in standard errors.
func t975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// JudgeMemory judges the memory of the watched process name again, its samples in the given
// releases (Release) left out of its floors. It is an error when the report has no memory
// figures for name.
func (r *Report) JudgeMemory(name string, releases []Release) error {
	for i, m := range r.Memory {
		if m.Name != name {
			continue
		}
		if m.Err != "" {
			return fmt.Errorf("loadgen: no memory figures of %s: %s", name, m.Err)
		}
		has := false
		for _, s := range r.Samples {
			_, ok := s.RSS[name]
			has = has || ok
		}
		if !has {
			return fmt.Errorf("loadgen: the report's samples hold no RSS of %s", name)
		}
		r.Memory[i] = memoryTrend(Memory{Name: m.Name, PID: m.PID, PeakKiB: m.PeakKiB}, r.Samples, loadTime(r.Samples, r.Duration), releases)
		return nil
	}
	return fmt.Errorf("loadgen: %s was not watched", name)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// MemoryBounded reports whether the memory of each named watched process (of every watched
// process, with no names) was judged bounded. A name that was not watched, or whose verdict is
// unknown, makes it false.
func (r *Report) MemoryBounded(names ...string) bool {
	verdict := map[string]string{}
	for _, m := range r.Memory {
		verdict[m.Name] = m.Verdict
	}
	if len(names) == 0 {
		for name := range verdict {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if verdict[n] != MemBounded {
			return false
		}
	}
	return true
}

// PoolMemory judges the memory of one process over several runs of the same load (the same
// code, mode, rate and duration) together: it narrows the interval of the same half's slope, as
// more runs would, and does not extend the time judged (a longer run's second half lies later).
// Each series' second-half slopes (the peaks', the floors') are pooled by the inverse of their
// variances (the variance a 95% half-width h gives: (h/t)², t Student's quantile for the run's
// spans less two), with the half-width t·√(1/Σ weights), t now for the spans of all the runs
// less two each; the first halves' slopes, which have no interval, are averaged. When the runs
// disagree by more than their intervals allow (Cochran's Q above its degrees of freedom, the
// runs less one), the slopes are taken to differ from run to run as well: the spread Q implies
// (DerSimonian and Laird's τ²) is added to each run's variance before weighing, which widens
// the interval. The verdict is then the criterion above, applied to the pooled slopes. Name,
// Releases and FloorSamplesLeftOut are the runs' (summed), the RSS figures left zero;
// Pooled's PeaksQ and FloorsQ give each series' Q. It is an error to pool fewer than two runs,
// or a run with a half of fewer than MinTrendSamples spans or a second half without an interval
// (a half-width of 0).
func PoolMemory(runs []Memory) (Pooled, error) {
	if len(runs) < 2 {
		return Pooled{}, fmt.Errorf("loadgen: pooling needs two runs or more, got %d", len(runs))
	}
	for i, m := range runs {
		for _, half := range []struct {
			name       string
			n          int
			needsWidth bool
			h          float64
		}{
			{"peaks' first half", m.FirstSpans, false, 0}, {"peaks' second half", m.SecondSpans, true, m.SecondSlopeHalfWidth},
			{"floors' first half", m.FirstFloorSpans, false, 0}, {"floors' second half", m.SecondFloorSpans, true, m.SecondFloorSlopeHalfWidth},
		} {
			if half.n < MinTrendSamples || half.needsWidth && !(half.h > 0) {
				return Pooled{}, fmt.Errorf("loadgen: run %d of %s: the %s has %d spans and half-width %g: nothing to pool",
					i, m.Name, half.name, half.n, half.h)
			}
		}
	}
	p := Pooled{Memory: Memory{Name: runs[0].Name}}
	p.SecondSlope, p.SecondSlopeHalfWidth, p.SecondSpans, p.PeaksQ = poolSlopes(runs,
		func(m Memory) (float64, float64, int) { return m.SecondSlope, m.SecondSlopeHalfWidth, m.SecondSpans })
	p.SecondFloorSlope, p.SecondFloorSlopeHalfWidth, p.SecondFloorSpans, p.FloorsQ = poolSlopes(runs,
		func(m Memory) (float64, float64, int) {
			return m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.SecondFloorSpans
		})
	for _, m := range runs {
		p.FirstSlope += m.FirstSlope / float64(len(runs))
		p.FirstFloorSlope += m.FirstFloorSlope / float64(len(runs))
		p.FirstSpans += m.FirstSpans
		p.FirstFloorSpans += m.FirstFloorSpans
		p.Releases += m.Releases
		p.FloorSamplesLeftOut += m.FloorSamplesLeftOut
	}
	p.Verdict = p.verdict()
	return p, nil
}

// Pooled is the memory of one process judged over several runs (PoolMemory). PeaksQ and FloorsQ
// are Cochran's Q of the runs' second-half slopes, with the runs less one degrees of freedom:
// above them, the runs disagree by more than their intervals allow, and the interval was widened.
type Pooled struct {
	Memory
	PeaksQ, FloorsQ float64
}

// poolSlopes pools the second-half slopes that of gives for each run (slope, 95% half-width,
// spans): the pooled slope, its half-width, all the spans, and Cochran's Q (PoolMemory).
func poolSlopes(runs []Memory, of func(Memory) (s, h float64, n int)) (slope, half float64, spans int, q float64) {
	vars := make([]float64, len(runs))
	df := 0
	for i, m := range runs {
		_, h, n := of(m)
		se := h / t975(n-2)
		vars[i] = se * se
		df += n - 2
		spans += n
	}
	mean := func(extra float64) (mu, sw, sw2 float64) {
		var sws float64
		for i, m := range runs {
			s, _, _ := of(m)
			w := 1 / (vars[i] + extra)
			sw += w
			sw2 += w * w
			sws += w * s
		}
		return sws / sw, sw, sw2
	}
	mu, sw, sw2 := mean(0)
	for i, m := range runs {
		s, _, _ := of(m)
		q += (s - mu) * (s - mu) / vars[i]
	}
	if k := float64(len(runs) - 1); q > k {
		mu, sw, _ = mean((q - k) / (sw - sw2/sw))
	}
	return mu, t975(df) / math.Sqrt(sw), spans, q
}
