package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// series samples rss(t) (MiB) of the process "p" every second from 1 s to the end of dur, and
// a few seconds after it (the drain, which the trend must ignore).
func series(dur time.Duration, rss func(t time.Duration) float64) []Sample {
	var out []Sample
	for at := time.Second; at <= dur+5*time.Second; at += time.Second {
		out = append(out, Sample{At: at, RSS: map[string]int64{"p": int64(rss(at) * 1024)}})
	}
	return out
}

func TestMemoryTrend(t *testing.T) {
	const dur = 5 * time.Minute
	mins := func(t time.Duration) float64 { return t.Minutes() }
	sawtooth := func(t time.Duration) float64 { return 12 * math.Mod(t.Seconds(), 7) / 7 } // GC cycles
	tests := []struct {
		name        string
		dur         time.Duration
		rss         func(time.Duration) float64
		wantVerdict string
		// wantSlopes, when set, are the expected first and second slopes (MiB/min, ±0.5).
		wantSlopes []float64
	}{
		{"flat with a GC sawtooth", dur, func(t time.Duration) float64 { return 200 + sawtooth(t) }, MemBounded, []float64{0, 0}},
		{"linear leak 20 MiB/min", dur, func(t time.Duration) float64 { return 100 + 20*mins(t) }, MemGrowing, []float64{20, 20}},
		{"slow leak 2 MiB/min", dur, func(t time.Duration) float64 { return 100 + 2*mins(t) + sawtooth(t) }, MemGrowing, []float64{2, 2}},
		{"drift under the flat slope", dur, func(t time.Duration) float64 { return 100 + 0.5*mins(t) }, MemBounded, []float64{0.5, 0.5}},
		{"fill with a 1-minute time constant", dur, func(t time.Duration) float64 { return 50 + 300*(1-math.Exp(-mins(t))) }, MemBounded, nil},
		{"fill with a 3-minute time constant", dur, func(t time.Duration) float64 { return 50 + 300*(1-math.Exp(-mins(t)/3)) }, MemGrowing, nil},
		{"square-root growth", dur, func(t time.Duration) float64 { return 50 + 100*math.Sqrt(mins(t)) }, MemGrowing, nil},
		{"step at 10 s then flat", dur, func(t time.Duration) float64 {
			if t < 10*time.Second {
				return 40
			}
			return 400 + sawtooth(t)
		}, MemBounded, nil},
		{"shrinking", dur, func(t time.Duration) float64 { return 400 - 10*mins(t) }, MemBounded, []float64{-10, -10}},
		{"too short for a trend", 6 * time.Second, func(t time.Duration) float64 { return 100 }, MemUnknown, nil},
		{"leak of 5 MiB/min under cycles of 230 MiB", dur, func(t time.Duration) float64 { return 300 + 5*mins(t) + cycles(t, 30, 0) }, MemGrowing, []float64{5, 5}},
		{"cycles whose peak grows 20 MiB/min", dur, func(t time.Duration) float64 {
			return 300 + (1+20*mins(t)/230)*cycles(t, 30, 0)
		}, MemGrowing, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memoryTrend(Memory{Name: "p"}, series(tt.dur, tt.rss), tt.dur, nil)
			if got.Verdict != tt.wantVerdict {
				t.Errorf("verdict %s, want %s (slopes %+.2f, %+.2f MiB/min)", got.Verdict, tt.wantVerdict, got.FirstSlope, got.SecondSlope)
			}
			if tt.wantSlopes != nil && (math.Abs(got.FirstSlope-tt.wantSlopes[0]) > 0.5 || math.Abs(got.SecondSlope-tt.wantSlopes[1]) > 0.5) {
				t.Errorf("slopes %+.2f, %+.2f MiB/min, want %+.2f, %+.2f", got.FirstSlope, got.SecondSlope, tt.wantSlopes[0], tt.wantSlopes[1])
			}
		})
	}
}

// cycles is a sawtooth of 230 MiB with a period of period seconds, shifted by phase seconds: the
// analyzer's DuckDB buffer filling between checkpoints and emptied by each.
func cycles(t time.Duration, period, phase float64) float64 {
	return 230 * math.Mod(t.Seconds()+phase, period) / period
}

// Memory that fills and empties in cycles of tens of seconds is bounded whatever the phase of
// the cycles against the halves of the run. The least-squares slopes of the samples called one
// phase in five of these "growing".
func TestMemoryTrendCycles(t *testing.T) {
	const dur = 5 * time.Minute
	for _, fill := range []float64{0, 100, 300} {
		for _, period := range []float64{15, 20, 25, 30, 40, 55} {
			for phase := 0.0; phase < period; phase += 2.5 {
				rss := func(at time.Duration) float64 {
					return 150 + fill*(1-math.Exp(-at.Minutes()/0.5)) + cycles(at, period, phase)
				}
				if got := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, nil); got.Verdict != MemBounded {
					t.Errorf("fill %v MiB, cycles of %v s at phase %v s: %s (peaks %+.1f, %+.1f MiB/min, floors %+.1f, %+.1f)",
						fill, period, phase, got.Verdict, got.FirstSlope, got.SecondSlope, got.FirstFloorSlope, got.SecondFloorSlope)
				}
			}
		}
	}
}

func TestMemoryTrendPoints(t *testing.T) {
	// 100 MiB + 20 MiB/min over 4 minutes, sampled every second from 1 s; the drain after
	// 4 minutes (still sampled) must not count as the end of publishing.
	const dur = 4 * time.Minute
	atOneSecond := (100 + 20.0/60) * 1024
	got := memoryTrend(Memory{Name: "p", PID: 7, PeakKiB: 999}, series(dur, func(t time.Duration) float64 { return 100 + 20*t.Minutes() }), dur, nil)
	want := Memory{Name: "p", PID: 7, PeakKiB: 999,
		StartKiB:   int64(atOneSecond), // the first sample, at 1 s
		QuarterKiB: 120 * 1024,         // 1 min
		HalfKiB:    140 * 1024,         // 2 min
		EndKiB:     180 * 1024,         // 4 min, not 4 min 5 s
		JudgedOver: dur,
		// Ten windows of 24 s: nine spans, the fifth (middle at 2 min) in both halves.
		FirstSpans: 5, SecondSpans: 5, FirstFloorSpans: 5, SecondFloorSpans: 5,
		Verdict: MemGrowing}
	got.FirstSlope, got.SecondSlope = math.Round(got.FirstSlope*100)/100, math.Round(got.SecondSlope*100)/100
	got.FirstFloorSlope, got.SecondFloorSlope = math.Round(got.FirstFloorSlope*100)/100, math.Round(got.SecondFloorSlope*100)/100
	got.SecondSlopeHalfWidth, got.SecondFloorSlopeHalfWidth = math.Round(got.SecondSlopeHalfWidth*100)/100, math.Round(got.SecondFloorSlopeHalfWidth*100)/100
	want.FirstSlope, want.SecondSlope, want.FirstFloorSlope, want.SecondFloorSlope = 20, 20, 20, 20
	if got != want {
		t.Errorf("memoryTrend =\n %+v, want\n %+v", got, want)
	}
	// A process without samples (it could not be read) has no trend.
	if m := memoryTrend(Memory{Name: "gone"}, series(dur, func(time.Duration) float64 { return 1 }), dur, nil); m.Verdict != MemUnknown || m.EndKiB != 0 {
		t.Errorf("unsampled process: %+v, want verdict unknown and no RSS", m)
	}
}

func TestMemoryVerdict(t *testing.T) {
	tests := []struct {
		s1, s2, h2 float64
		n1, n2     int
		want       string
	}{
		{0, 0, 0, 150, 150, MemBounded},
		{0, FlatSlope, 0, 150, 150, MemBounded},           // at the flat slope
		{0, FlatSlope + 0.01, 0, 150, 150, MemGrowing},    // just over it, nothing to level off from
		{40, 10, 0, 150, 150, MemBounded},                 // exactly a quarter of the first half's pace
		{40, 10.1, 0, 150, 150, MemGrowing},               // just over a quarter
		{-5, 3, 0, 150, 150, MemGrowing},                  // fell, then grew
		{-5, -5, 0, 150, 150, MemBounded},                 // shrinking
		{100, 0, 0, MinTrendSamples - 1, 150, MemUnknown}, // too few samples in the first half
		{100, 0, 0, 150, MinTrendSamples - 1, MemUnknown},
		// The interval: bounded only when all of it is at or under the line, growing only
		// when all of it is over the line.
		{0, 0, FlatSlope, 150, 150, MemBounded},
		{0, 0, FlatSlope + 0.01, 150, 150, MemUnresolved},
		{0, 5, 3.9, 150, 150, MemGrowing},
		{0, 5, 4, 150, 150, MemUnresolved},
		{40, 5, 5, 150, 150, MemBounded},
		{40, 12, 2.1, 150, 150, MemUnresolved},
		{40, 12, 1.9, 150, 150, MemGrowing},
		{-5, -5, 20, 150, 150, MemUnresolved}, // shrinking, or not: ±20 MiB/min cannot tell
	}
	for _, tt := range tests {
		if got := memoryVerdict(tt.s1, tt.s2, tt.h2, tt.n1, tt.n2); got != tt.want {
			t.Errorf("memoryVerdict(%v, %v ± %v, %d, %d) = %s, want %s", tt.s1, tt.s2, tt.h2, tt.n1, tt.n2, got, tt.want)
		}
	}
}

func TestReportMemoryBounded(t *testing.T) {
	rep := &Report{Memory: []Memory{
		{Name: "analyzer", Verdict: MemBounded},
		{Name: "nats-embedded", Verdict: MemGrowing},
		{Name: "producer", Verdict: MemUnknown},
	}}
	tests := []struct {
		names []string
		want  bool
	}{
		{[]string{"analyzer"}, true},
		{[]string{"analyzer", "nats-embedded"}, false},
		{[]string{"producer"}, false}, // unknown is not bounded
		{[]string{"missing"}, false},  // not watched
		{nil, false},                  // every watched process
	}
	for _, tt := range tests {
		if got := rep.MemoryBounded(tt.names...); got != tt.want {
			t.Errorf("MemoryBounded(%q) = %v, want %v", tt.names, got, tt.want)
		}
	}
	if (&Report{}).MemoryBounded() {
		t.Error("MemoryBounded() with nothing watched = true, want false")
	}
	if !(&Report{Memory: []Memory{{Name: "a", Verdict: MemBounded}}}).MemoryBounded() {
		t.Error("MemoryBounded() with every process bounded = false, want true")
	}
}

// swinging is a process whose RSS swings as the analyzer's does under load, on a base of
// base(t) MiB: DuckDB's buffer filling between checkpoints (cycles of 20–40 s, each to a
// height of 200–260 MiB) and the Go heap between collections (cycles of 3–10 s, to 20–90 MiB),
// the lengths and heights drawn from seed. Its samples must be asked for in the order of time.
func swinging(seed uint64, base func(time.Duration) float64) func(time.Duration) float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	// sawtooth returns the height at t of cycles of random lengths and heights.
	sawtooth := func(minLen, maxLen, minH, maxH float64) func(t float64) float64 {
		start, length, height := -r.Float64()*maxLen, 0.0, 0.0
		return func(t float64) float64 {
			for t >= start+length {
				start += length
				length, height = minLen+r.Float64()*(maxLen-minLen), minH+r.Float64()*(maxH-minH)
			}
			return height * (t - start) / length
		}
	}
	duckdb, heap := sawtooth(20, 40, 200, 260), sawtooth(3, 10, 20, 90)
	return func(t time.Duration) float64 { return base(t) + duckdb(t.Seconds()) + heap(t.Seconds()) }
}

// The verdict of memory that swings as the analyzer's does says what the run can tell. A
// bounded process is seldom called growing (the intervals are 95% ones, of the peaks and of the
// floors: 5% of false alarms, give or take what the √2 for the spans' overlap approximates); a
// 5-minute run of one cannot show it bounded either (its slopes' intervals are ±36 MiB/min: the
// verdict read from the slopes alone, without them, called 717 of these 1000 runs growing and
// the rest bounded); an hour's run can, and tells it from a leak of 2 MiB/min.
func TestMemoryTrendSwings(t *testing.T) {
	tests := []struct {
		dur  time.Duration
		leak float64 // MiB/min
		runs int
		// The fewest and the most runs, in each hundred, with each verdict.
		minBounded, maxBounded, minGrowing, maxGrowing float64
	}{
		{5 * time.Minute, 0, 1000, 0, 1, 0, 6},
		{15 * time.Minute, 0, 1000, 0, 5, 0, 6},
		{15 * time.Minute, 20, 100, 0, 0, 100, 100},
		{time.Hour, 0, 100, 50, 100, 0, 6},
		{time.Hour, 2, 100, 0, 0, 95, 100},
	}
	for _, tt := range tests {
		count := map[string]int{}
		var halfWidth float64
		for seed := range uint64(tt.runs) {
			rss := swinging(seed, func(at time.Duration) float64 { return 150 + tt.leak*at.Minutes() })
			m := memoryTrend(Memory{Name: "p"}, series(tt.dur, rss), tt.dur, nil)
			count[m.Verdict]++
			halfWidth += m.SecondSlopeHalfWidth / float64(tt.runs)
		}
		b, g := 100*float64(count[MemBounded])/float64(tt.runs), 100*float64(count[MemGrowing])/float64(tt.runs)
		if b < tt.minBounded || b > tt.maxBounded || g < tt.minGrowing || g > tt.maxGrowing {
			t.Errorf("%v with a leak of %v MiB/min: verdicts of %d runs %v (second-half peaks' interval ±%.1f MiB/min), want bounded in %v–%v%% and growing in %v–%v%%",
				tt.dur, tt.leak, tt.runs, count, halfWidth, tt.minBounded, tt.maxBounded, tt.minGrowing, tt.maxGrowing)
		}
	}
}

// withReattaches adds to rss the dips of reattaches, drawn from seed: one every 120–180 s, each
// dropping the RSS by 150–200 MiB and refilling it over 20–28 s, as the analyzer's do under the
// 20,000 events/s load. It returns the releases as the analyzer's stats lines tell them: each in
// the 5 seconds between two lines.
func withReattaches(seed uint64, dur time.Duration, rss func(time.Duration) float64) (func(time.Duration) float64, []Release) {
	r := rand.New(rand.NewPCG(seed, 2))
	type dip struct{ at, depth, refill float64 }
	var dips []dip
	var rel []Release
	for at := 60 + r.Float64()*120; at < dur.Seconds(); at += 120 + r.Float64()*60 {
		dips = append(dips, dip{at, 150 + r.Float64()*50, 20 + r.Float64()*8})
		from := time.Duration(math.Floor(at/5)*5) * time.Second
		rel = append(rel, Release{From: from, To: from + 5*time.Second})
	}
	return func(t time.Duration) float64 {
		v := rss(t)
		for _, d := range dips {
			if s := t.Seconds() - d.at; s >= 0 && s < d.refill {
				v -= d.depth * (1 - s/d.refill)
			}
		}
		return v
	}, rel
}

// Reattaches drop the analyzer's RSS for a moment, and a span that holds one has a floor far
// under its neighbours': the floors' interval is then too wide to tell bounded from growing,
// even in an hour. Told when they were (Report.JudgeMemory), the verdict leaves them out of the
// floors: the floors of a bounded process are then judged bounded, those of a leak of 2 MiB/min
// growing. (The peaks keep every sample: in an hour they are judged bounded in about half of the
// runs, as without reattaches, TestMemoryTrendSwings.)
func TestMemoryTrendAroundReleases(t *testing.T) {
	const dur, runs = time.Hour, 100
	tests := []struct {
		leak     float64
		releases bool
		// The fewest and the most runs of the hundred whose floors are judged bounded, and
		// growing; the fewest whose memory is.
		minFloorsBounded, maxFloorsBounded, minFloorsGrowing, maxFloorsGrowing, minBounded, minGrowing int
	}{
		{0, false, 0, 10, 0, 6, 0, 0},
		{0, true, 90, 100, 0, 6, 40, 0},
		{2, true, 0, 0, 85, 100, 0, 95},
	}
	for _, tt := range tests {
		floors, memory := map[string]int{}, map[string]int{}
		var floorWidth float64
		for seed := range uint64(runs) {
			rss, rel := withReattaches(seed, dur, swinging(seed, func(at time.Duration) float64 { return 350 + tt.leak*at.Minutes() }))
			if !tt.releases {
				rel = nil
			}
			m := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, rel)
			memory[m.Verdict]++
			floors[memoryVerdict(m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, MinTrendSamples, MinTrendSamples)]++
			floorWidth += m.SecondFloorSlopeHalfWidth / runs
		}
		fb, fg := floors[MemBounded], floors[MemGrowing]
		if fb < tt.minFloorsBounded || fb > tt.maxFloorsBounded || fg < tt.minFloorsGrowing || fg > tt.maxFloorsGrowing ||
			memory[MemBounded] < tt.minBounded || memory[MemGrowing] < tt.minGrowing {
			t.Errorf("leak %v MiB/min, releases told %v: floors %v (second half's interval ±%.1f MiB/min), memory %v of %d runs; want floors bounded in %d–%d, growing in %d–%d, memory bounded in %d at least, growing in %d at least",
				tt.leak, tt.releases, floors, floorWidth, memory, runs, tt.minFloorsBounded, tt.maxFloorsBounded, tt.minFloorsGrowing, tt.maxFloorsGrowing, tt.minBounded, tt.minGrowing)
		}
		t.Logf("leak %v MiB/min, releases told %v: floors %v (±%.1f MiB/min), memory %v", tt.leak, tt.releases, floors, floorWidth, memory)
	}
}

// A release leaves its samples, and those of ReleaseRefill after it, out of the floors, and
// nothing out of the peaks.
func TestMemoryTrendReleaseLeavesOutFloorsOnly(t *testing.T) {
	const dur = 10 * time.Minute
	// Flat at 300 MiB, with one dip to 100 MiB for 10 s at 9 minutes, and a spike to 500 MiB
	// inside the release.
	rss := func(at time.Duration) float64 {
		switch {
		case at == 9*time.Minute+5*time.Second:
			return 500
		case at >= 9*time.Minute && at < 9*time.Minute+10*time.Second:
			return 100
		}
		return 300
	}
	rel := []Release{{From: 9*time.Minute - 5*time.Second, To: 9 * time.Minute}}
	blind := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, nil)
	told := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, rel)
	if blind.SecondFloorSlope >= -1 {
		t.Fatalf("without the release the dip should pull the floors' slope down: %+.2f MiB/min", blind.SecondFloorSlope)
	}
	if told.SecondFloorSlope != 0 || told.SecondFloorSlopeHalfWidth != 0 {
		t.Errorf("floors around the release: slope %+.2f ± %.2f MiB/min, want 0 ± 0", told.SecondFloorSlope, told.SecondFloorSlopeHalfWidth)
	}
	if told.SecondSlope != blind.SecondSlope || told.SecondSlope <= 0 {
		t.Errorf("peaks' slope %+.2f with the release, %+.2f without: the release must not touch the peaks (and the spike raises them)",
			told.SecondSlope, blind.SecondSlope)
	}
	// (9:00 − 5 s, 9:00 + 30 s]: 35 samples, one a second.
	if told.Releases != 1 || told.FloorSamplesLeftOut != 35 {
		t.Errorf("releases %d, floor samples left out %d, want 1 and 35", told.Releases, told.FloorSamplesLeftOut)
	}
	// A release over the whole run leaves no floors: too few to judge.
	all := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, []Release{{From: 0, To: dur}})
	if all.Verdict != MemUnknown {
		t.Errorf("every sample released: verdict %s, want %s", all.Verdict, MemUnknown)
	}
}

func TestReportJudgeMemory(t *testing.T) {
	const dur = 10 * time.Minute
	rss := func(at time.Duration) float64 {
		if at >= 7*time.Minute && at < 7*time.Minute+10*time.Second {
			return 100
		}
		return 300
	}
	samples := series(dur, rss)
	rep := &Report{Duration: dur, Samples: samples, Memory: []Memory{
		memoryTrend(Memory{Name: "p", PID: 7, PeakKiB: 400 << 10}, samples, dur, nil),
		{Name: "gone", PID: 8, Err: "no such process", Verdict: MemUnknown},
	}}
	if err := rep.JudgeMemory("p", []Release{{From: 7*time.Minute - 5*time.Second, To: 7 * time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if m := rep.Memory[0]; m.Name != "p" || m.PID != 7 || m.PeakKiB != 400<<10 || m.Releases != 1 || m.SecondFloorSlope != 0 || m.Verdict != MemBounded {
		t.Errorf("judged again: %+v", m)
	}
	for _, name := range []string{"gone", "missing"} {
		if err := rep.JudgeMemory(name, nil); err == nil {
			t.Errorf("JudgeMemory(%q): no error", name)
		}
	}
}

// A stream that stopped storing events well before publishing ended (the server refused them)
// ends the time the memory is judged over: after it the processes idle, and their memory then
// says nothing of the load's. One that stored until the end, or nearly, is judged over it all.
func TestMemoryJudgedWhileTheStreamStored(t *testing.T) {
	const dur = 10 * time.Minute
	// Memory that grows 20 MiB/min under load, and drops to 100 MiB once the load stops.
	stopAt := 7 * time.Minute
	samples := series(dur, func(at time.Duration) float64 {
		if at > stopAt {
			return 100
		}
		return 200 + 20*at.Minutes()
	})
	for i := range samples {
		samples[i].Published = int(samples[i].At / time.Millisecond)
		samples[i].Stored = int(min(samples[i].At, stopAt) / time.Millisecond)
	}
	// The publisher stopped too (its samples flat): nothing says the load stopped early.
	flat := append([]Sample(nil), samples...)
	for i := range flat {
		flat[i].Published = flat[i].Stored
	}
	if got := loadTime(flat, dur); got != dur {
		t.Errorf("loadTime with the publisher idle too = %v, want %v", got, dur)
	}
	// Samples missing after 7 minutes (the stream could not be asked): the same.
	if got := loadTime(samples[:7*60], dur); got != dur {
		t.Errorf("loadTime with the samples ending at 7 minutes = %v, want %v", got, dur)
	}
	if got := loadTime(samples, dur); got != stopAt {
		t.Errorf("loadTime = %v, want %v: the last sample at which the stream grew", got, stopAt)
	}
	rep := &Report{Duration: dur, Samples: samples, Memory: []Memory{{Name: "p"}}}
	if err := rep.JudgeMemory("p", nil); err != nil {
		t.Fatal(err)
	}
	if m := rep.Memory[0]; m.JudgedOver != stopAt || m.Verdict != MemGrowing || m.EndKiB != 340<<10 {
		t.Errorf("judged over %v, RSS at the end %d KiB, verdict %s; want %v, %d, %s (over the whole publishing time the drop reads as bounded)",
			m.JudgedOver, m.EndKiB, m.Verdict, stopAt, 340<<10, MemGrowing)
	}
	if blind := memoryTrend(Memory{Name: "p"}, samples, dur, nil); blind.Verdict != MemBounded {
		t.Errorf("over the whole publishing time: %s, want %s (what the test guards against)", blind.Verdict, MemBounded)
	}
	// Stored until 20 s before the end (the last batch acknowledged a little early): all of it.
	for i := range samples {
		samples[i].Stored = int(min(samples[i].At, dur-20*time.Second) / time.Millisecond)
	}
	if got := loadTime(samples, dur); got != dur {
		t.Errorf("loadTime = %v, want %v", got, dur)
	}
}

// Pooling runs of the same load narrows the second half's interval as a longer run would (by
// about the square root of their number), with the slope of each weighted by the inverse of its
// variance. Of a process that swings as the analyzer does, 30-minute runs pooled four at a time
// are judged bounded more often than alone, a leak of 2 MiB/min is judged growing, and the
// pooled interval of the peaks' slope holds the true one in most groups.
func TestPoolMemory(t *testing.T) {
	const dur = 30 * time.Minute
	const groups, per = 50, 4
	for _, leak := range []float64{0, 2} {
		alone, pooled := map[string]int{}, map[string]int{}
		covered := 0
		var widthAlone, widthPooled float64
		for g := range uint64(groups) {
			var runs []Memory
			for k := range uint64(per) {
				rss := swinging(g*per+k, func(at time.Duration) float64 { return 150 + leak*at.Minutes() })
				m := memoryTrend(Memory{Name: "p"}, series(dur, rss), dur, nil)
				alone[m.Verdict]++
				widthAlone += m.SecondSlopeHalfWidth / (groups * per)
				runs = append(runs, m)
			}
			p, err := PoolMemory(runs)
			if err != nil {
				t.Fatal(err)
			}
			pooled[p.Verdict]++
			widthPooled += p.SecondSlopeHalfWidth / groups
			if math.Abs(p.SecondSlope-leak) <= p.SecondSlopeHalfWidth {
				covered++
			}
		}
		t.Logf("leak %v MiB/min: alone %v (±%.2f), pooled by %d %v (±%.2f); the true slope in %d of %d pooled intervals",
			leak, alone, widthAlone, per, pooled, widthPooled, covered, groups)
		if r := widthPooled / widthAlone; r < 0.8/math.Sqrt(per) || r > 1.2/math.Sqrt(per) {
			t.Errorf("leak %v: pooled interval ±%.2f against ±%.2f alone, a ratio of %.2f, want about 1/√%d", leak, widthPooled, widthAlone, r, per)
		}
		if covered < groups*85/100 {
			t.Errorf("leak %v: the true slope in %d of %d pooled intervals, want 85%% or more", leak, covered, groups)
		}
		switch leak {
		case 0:
			if pooled[MemGrowing] > groups/10 || 100*pooled[MemBounded]/groups <= 100*alone[MemBounded]/(groups*per) {
				t.Errorf("no leak: pooled %v, alone %v: want pooled bounded in a larger share and growing in 10%% at most", pooled, alone)
			}
		default:
			if pooled[MemGrowing] < groups*95/100 {
				t.Errorf("leak %v: pooled %v, want growing in 95%% or more", leak, pooled)
			}
		}
	}
}

// PoolMemory weighs each run's second-half slope by the inverse of the variance its interval
// gives, adds the spread between the runs to those variances when they disagree by more than
// their intervals allow, averages the first halves, and refuses what it cannot pool.
func TestPoolMemoryWeights(t *testing.T) {
	// run has peaks s1, s2 ± h and floors f1, f2 ± g, each half of 30 spans.
	run := func(s1, s2, h, f1, f2, g float64) Memory {
		return Memory{Name: "p", FirstSlope: s1, SecondSlope: s2, SecondSlopeHalfWidth: h, FirstFloorSlope: f1,
			SecondFloorSlope: f2, SecondFloorSlopeHalfWidth: g, FirstSpans: 30, SecondSpans: 30, FirstFloorSpans: 30, SecondFloorSpans: 30}
	}
	t28 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 28}.Quantile(0.975)
	t56 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 56}.Quantile(0.975)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Peaks that agree: variances (0.5/t28)² and (1/t28)², weights in the ratio 1 to ¼, so the
	// slope is (0.5·1 + 0.6·¼)/(1 + ¼) = 0.52, the half-width 0.5·t56/(t28·√1.25), and Q
	// (0.008·t28²) is under its one degree of freedom. Floors that disagree: 0 ± 1 and 3 ± 2
	// give Q = 1.8·t28², and a spread τ² = (Q − 1)/(1.25·t28² − 1.0625·t28²/1.25) is added to
	// both variances.
	p, err := PoolMemory([]Memory{run(2, 0.5, 0.5, 5, 0, 1), run(4, 0.6, 1, 7, 3, 2)})
	if err != nil {
		t.Fatal(err)
	}
	tt := t28 * t28
	tau2 := (1.8*tt - 1) / (1.25*tt - 1.0625*tt/1.25)
	wa, wb := 1/(1/tt+tau2), 1/(4/tt+tau2)
	wantFloor, wantFloorH := 3*wb/(wa+wb), t56/math.Sqrt(wa+wb)
	wantH := 0.5 * t56 / t28 / math.Sqrt(1.25)
	if !near(p.SecondSlope, 0.52) || !near(p.SecondSlopeHalfWidth, wantH) || !near(p.PeaksQ, 0.008*tt) ||
		p.FirstSlope != 3 || p.SecondSpans != 60 {
		t.Errorf("peaks pooled: %+v, want first 3, second 0.52 ± %.4f over 60 spans, Q %.4f", p, wantH, 0.008*tt)
	}
	if !near(p.SecondFloorSlope, wantFloor) || !near(p.SecondFloorSlopeHalfWidth, wantFloorH) || !near(p.FloorsQ, 1.8*tt) ||
		p.FirstFloorSlope != 6 || p.SecondFloorSpans != 60 {
		t.Errorf("floors pooled: %+v, want first 6, second %.4f ± %.4f over 60 spans, Q %.4f", p, wantFloor, wantFloorH, 1.8*tt)
	}
	// The floors' widened interval (about ±3.0 around 1.4) leaves them unresolved; the peaks,
	// 0.52 ± 0.44, are bounded by themselves.
	if p.Verdict != MemUnresolved || memoryVerdict(p.FirstSlope, p.SecondSlope, p.SecondSlopeHalfWidth, 60, 60) != MemBounded {
		t.Errorf("verdict %s (peaks alone %s), want unresolved (bounded)", p.Verdict,
			memoryVerdict(p.FirstSlope, p.SecondSlope, p.SecondSlopeHalfWidth, 60, 60))
	}
	good := run(1, 1, 1, 1, 1, 1)
	floorsWithoutWidth := run(1, 1, 1, 1, 1, 0)
	shortFirstHalf := good
	shortFirstHalf.FirstFloorSpans = MinTrendSamples - 1
	for _, bad := range [][]Memory{nil, {good}, {good, floorsWithoutWidth}, {good, shortFirstHalf}} {
		if _, err := PoolMemory(bad); err == nil {
			t.Errorf("PoolMemory(%+v) = nil error, want one", bad)
		}
	}
}
