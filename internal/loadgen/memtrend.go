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
// Config.Sample; a least-squares line is fitted to the samples of each half of the publishing
// time (the slope of a line through many samples is not moved by the sawtooth of garbage
// collection as a difference of two samples is). With s1 and s2 the slopes of the first and the
// second half, in MiB/min, the memory is bounded when
//
//	s2 <= FlatSlope  or  s2 <= BoundedRatio * s1
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
// one-second samples that swing by ~10 MiB with garbage collection. The verdict is no proof of
// boundedness for days (1 MiB/min is 1.4 GiB a day): the slopes are reported beside it so
// that a reader can extrapolate, and the verdicts of short runs (tens of seconds) mean little.
const (
	BoundedRatio = 0.25
	FlatSlope    = 1.0 // MiB/min
	// MinTrendSamples is the fewest RSS samples a half of the publishing time needs for a verdict.
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
	var x1, y1, x2, y2 []float64
	for _, p := range pts {
		x, y := p.at.Minutes(), float64(p.kib)/1024
		if p.at <= dur/2 {
			x1, y1 = append(x1, x), append(y1, y)
		}
		if p.at >= dur/2 {
			x2, y2 = append(x2, x), append(y2, y)
		}
	}
	m.FirstSlope, m.SecondSlope = slope(x1, y1), slope(x2, y2)
	m.Verdict = memoryVerdict(m.FirstSlope, m.SecondSlope, len(x1), len(x2))
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
