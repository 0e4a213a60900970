package loadgen

import (
	"time"
)

// Memory verdicts (Memory.Verdict).
const (
	// MemBounded: the process's RSS levelled off while the load went on (see BoundedRatio and
	// FlatSlope).
	MemBounded = "bounded"
	// MemGrowing: the RSS still grew in the second half of publishing at more than a quarter of
	// the first half's pace (and faster than FlatSlope).
	MemGrowing = "growing"
	// MemUnknown: too few RSS samples in a half of the publishing time to fit a trend.
	MemUnknown = "unknown"
)

// The memory verdict's criterion. The RSS of each watched process is sampled every
// Config.Sample; the publishing time is cut into TrendWindows windows, and of each span of two
// consecutive windows (60 s, one starting every 30 s in a 5-minute run) the largest and the
// smallest sample are kept: the peaks and the floors of the RSS. A least-squares line is
// fitted to the peaks of each half of the publishing time (the spans whose middle is in it),
// and another to the floors.
// With s1 and s2 the slopes of the first and the second half, in MiB/min, a series is bounded
// when
//
//	s2 <= FlatSlope  or  s2 <= BoundedRatio * s1
//
// and the memory is bounded when both its peaks and its floors are.
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
// their ratio noise): 1 MiB/min is about the resolution of a slope fitted to 2.5 minutes of
// samples that swing by ~10 MiB with garbage collection. The verdict is no proof of
// boundedness for days (1 MiB/min is 1.4 GiB a day): the slopes are reported beside it so
// that a reader can extrapolate, and the verdicts of short runs (tens of seconds) mean little.
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
	// TrendWindows is how many windows the publishing time is cut into (30 s each in a
	// 5-minute run).
	TrendWindows = 10
	// MinTrendSamples is the fewest spans of two windows with samples a half of the
	// publishing time needs for a verdict.
	MinTrendSamples = 5
)

// memoryTrend fills in m's RSS figures and verdict from the samples of the process m.Name taken
// while publishing lasted (0 < At <= dur).
func memoryTrend(m Memory, samples []Sample, dur time.Duration) Memory {
	type point struct {
		at  time.Duration
		kib int64
	}
	var pts []point
	for _, s := range samples {
		kib, ok := s.RSS[m.Name]
		if ok && s.At > 0 && s.At <= dur {
			pts = append(pts, point{s.At, kib})
		}
	}
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
		has       bool
		peak, low int64
	}
	wins := make([]window, TrendWindows)
	for _, p := range pts {
		// Window i holds the samples in (i, i+1] × dur/TrendWindows.
		i := min(max(int((int64(p.at)*TrendWindows+int64(dur)-1)/int64(dur))-1, 0), TrendWindows-1)
		w := &wins[i]
		if !w.has {
			*w = window{has: true, peak: p.kib, low: p.kib}
		}
		w.peak, w.low = max(w.peak, p.kib), min(w.low, p.kib)
	}
	var x1, peak1, low1, x2, peak2, low2 []float64
	for i := 1; i < TrendWindows; i++ {
		a, b := wins[i-1], wins[i]
		if !a.has || !b.has {
			continue
		}
		x := (time.Duration(i) * dur / TrendWindows).Minutes()
		peak, low := float64(max(a.peak, b.peak))/1024, float64(min(a.low, b.low))/1024
		if 2*i <= TrendWindows {
			x1, peak1, low1 = append(x1, x), append(peak1, peak), append(low1, low)
		}
		if 2*i >= TrendWindows {
			x2, peak2, low2 = append(x2, x), append(peak2, peak), append(low2, low)
		}
	}
	m.FirstSlope, m.SecondSlope = slope(x1, peak1), slope(x2, peak2)
	m.FirstFloorSlope, m.SecondFloorSlope = slope(x1, low1), slope(x2, low2)
	m.Verdict = memoryVerdict(m.FirstSlope, m.SecondSlope, len(x1), len(x2))
	if m.Verdict == MemBounded {
		m.Verdict = memoryVerdict(m.FirstFloorSlope, m.SecondFloorSlope, len(x1), len(x2))
	}
	return m
}

// memoryVerdict applies the criterion above to the slopes of the two halves (MiB/min) fitted
// to n1 and n2 samples.
func memoryVerdict(s1, s2 float64, n1, n2 int) string {
	switch {
	case n1 < MinTrendSamples || n2 < MinTrendSamples:
		return MemUnknown
	case s2 <= FlatSlope || s2 <= BoundedRatio*s1:
		return MemBounded
	default:
		return MemGrowing
	}
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
