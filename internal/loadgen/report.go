package loadgen

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// Sample is one observation during a load run. Counts are of this run's events only.
type Sample struct {
	At        time.Duration    `json:"at"`        // since the start
	Published int              `json:"published"` // handed to the connection
	Stored    int              `json:"stored"`    // in the stream
	Committed int              `json:"committed"` // acknowledged by the analyzer (committed in DuckDB)
	Lag       int              `json:"lag"`       // stream messages the analyzer has not committed
	RSS       map[string]int64 `json:"rss_kib,omitempty"`
}

// Memory is the memory of one watched process: its peak, and its resident set (VmRSS) over the
// publishing time with a verdict on whether it levelled off (see memoryVerdict's criterion).
type Memory struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	PeakKiB int64  `json:"peak_kib"` // VmHWM
	// RSS at the first sample, at the samples nearest a quarter and half of the time judged
	// (JudgedOver: the publishing time, or the part of it the stream stored events in), and at
	// its last sample.
	StartKiB   int64 `json:"start_kib"`
	QuarterKiB int64 `json:"quarter_kib"`
	HalfKiB    int64 `json:"half_kib"`
	EndKiB     int64 `json:"end_kib"`
	// FirstSlope and SecondSlope are least-squares slopes of the RSS's peaks (the largest
	// sample of each span of two windows of TrendWindow) over the first and the second half of the
	// publishing time, in MiB/min; FirstFloorSlope and SecondFloorSlope those of its floors
	// (the smallest sample of each span). See memtrend.go.
	FirstSlope       float64 `json:"first_slope_mib_per_min"`
	SecondSlope      float64 `json:"second_slope_mib_per_min"`
	FirstFloorSlope  float64 `json:"first_floor_slope_mib_per_min"`
	SecondFloorSlope float64 `json:"second_floor_slope_mib_per_min"`
	// SecondSlopeHalfWidth and SecondFloorSlopeHalfWidth are the half-widths of the 95%
	// intervals of SecondSlope and SecondFloorSlope (memtrend.go): how far the run's noise
	// leaves them uncertain.
	SecondSlopeHalfWidth      float64 `json:"second_slope_halfwidth_mib_per_min"`
	SecondFloorSlopeHalfWidth float64 `json:"second_floor_slope_halfwidth_mib_per_min"`
	// FirstSpans, SecondSpans, FirstFloorSpans and SecondFloorSpans are how many spans each
	// slope was fitted to (PoolMemory weighs and counts them).
	FirstSpans       int `json:"first_spans,omitempty"`
	SecondSpans      int `json:"second_spans,omitempty"`
	FirstFloorSpans  int `json:"first_floor_spans,omitempty"`
	SecondFloorSpans int `json:"second_floor_spans,omitempty"`
	// JudgedOver is the time from the first publish the memory was judged over: the
	// publishing time, or less when the stream stopped storing events well before it ended
	// (loadTime).
	JudgedOver time.Duration `json:"judged_over"`
	// Releases is how many releases (Release) the floors were judged around, and
	// FloorSamplesLeftOut how many samples they left out of the floors.
	Releases            int    `json:"releases,omitempty"`
	FloorSamplesLeftOut int    `json:"floor_samples_left_out,omitempty"`
	Verdict             string `json:"verdict"` // MemBounded, MemGrowing, MemUnresolved or MemUnknown
	Err                 string `json:"error,omitempty"`
}

// CPU is the CPU time (user + system) one watched process used during the run; the entry
// named MachineCPU is every process of the machine together, this run's and others'.
type CPU struct {
	Name string `json:"name"`
	PID  int    `json:"pid,omitempty"`
	// AtStart is the CPU time the process had used before the first publish (since it
	// started; since boot for the machine): what its whole life's CPU, read when it exits, is
	// compared with.
	AtStart time.Duration `json:"at_start"`
	// Publishing is the CPU time used from the first publish to the end of publishing; Cores is
	// it over that wall time (2 on a 2-core machine is all of it).
	Publishing time.Duration `json:"publishing"`
	Cores      float64       `json:"cores"`
	// Total is the CPU time used from the first publish until the analyzer had committed
	// everything (or the wait for it ended): what the run's events cost, the drain included.
	Total time.Duration `json:"total"`
	// PerEvent is Total over the events published, in microseconds.
	PerEvent float64 `json:"per_event_us"`
	Err      string  `json:"error,omitempty"`
}

// MachineCPU names the CPU entry of the whole machine (/proc/stat).
const MachineCPU = "machine"

// cpuUse computes a CPU entry from the process's CPU time read at the first publish (at0), at
// the end of publishing (atPub) and at the end of the run (atEnd), the publishing time and
// the events published.
func cpuUse(name string, pid int, at0, atPub, atEnd, publishing time.Duration, published int) CPU {
	c := CPU{Name: name, PID: pid, AtStart: at0, Publishing: atPub - at0, Total: atEnd - at0}
	if publishing > 0 {
		c.Cores = c.Publishing.Seconds() / publishing.Seconds()
	}
	if published > 0 {
		c.PerEvent = float64(c.Total.Microseconds()) / float64(published)
	}
	return c
}

// Report is the outcome of a load run.
type Report struct {
	Study    string        `json:"study"`
	Rate     float64       `json:"rate"` // target, events/s
	Duration time.Duration `json:"duration"`
	// Began is when publishing began: Sample.At and Release count from it.
	Began     time.Time `json:"began"`
	Published int       `json:"published"`
	Failed    int       `json:"failed"` // publishes JetStream did not acknowledge
	// Batched is how many were acknowledged by fast batches (Config.Batch); BatchStopped says
	// why the rest were not (published one by one instead).
	Batched      int    `json:"batched,omitempty"`
	BatchStopped string `json:"batch_stopped,omitempty"`
	MeanSize     int    `json:"mean_size"` // bytes per encoded event
	// PublishRate is Published over the publishing time.
	PublishRate float64 `json:"publish_rate"`
	Stored      int     `json:"stored"`
	Committed   int     `json:"committed"`
	// EndToEnd is from the first publish until the analyzer had committed every stored event;
	// EndToEndRate is Committed over it: the rate held from publish to DuckDB.
	EndToEnd     time.Duration `json:"end_to_end"`
	EndToEndRate float64       `json:"end_to_end_rate"`
	// Drain is how long the analyzer needed after publishing stopped.
	Drain   time.Duration `json:"drain"`
	Drained bool          `json:"drained"`
	MaxLag  int           `json:"max_lag"`
	// LagSlope is the least-squares slope of the lag over the second half of the publishing
	// time, in events/s: about 0 when the analyzer keeps up, about Rate minus its capacity
	// when it does not.
	LagSlope float64  `json:"lag_slope"`
	Samples  []Sample `json:"samples"`
	Memory   []Memory `json:"memory"`
	// CPU is each watched process's CPU time, and the machine's (MachineCPU).
	CPU      []CPU  `json:"cpu"`
	Consumer string `json:"consumer,omitempty"`
}

// Sustained reports whether the analyzer kept up: the publisher held at least 95% of the target
// rate, every event was committed, the lag stayed bounded (at most 10 seconds' worth of events:
// the analyzer commits in batches, so the lag is a sawtooth, not a constant) and the backlog
// left when publishing stopped drained within max(5 s, 5% of the duration). LagSlope is
// reported beside it: clearly positive over a long run means the lag was still growing.
func (r *Report) Sustained() bool {
	allowed := max(5*time.Second, r.Duration/20)
	return r.Consumer != "" && r.Drained && r.Failed == 0 && r.PublishRate >= 0.95*r.Rate &&
		float64(r.MaxLag) <= 10*r.Rate && r.Drain <= allowed
}

// Print writes the samples (at most about 30 lines) and the summary: the lag verdict
// (Sustained) and, apart from it, each watched process's memory trend and verdict.
func (r *Report) Print(w io.Writer) {
	names := make([]string, 0, len(r.Memory))
	for _, m := range r.Memory {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%8s %10s %10s %10s %8s", "t", "published", "stored", "committed", "lag")
	for _, n := range names {
		fmt.Fprintf(w, " %12s", n+"MiB")
	}
	fmt.Fprintln(w)
	step := max(1, len(r.Samples)/30)
	for i, s := range r.Samples {
		if i%step != 0 && i != len(r.Samples)-1 {
			continue
		}
		fmt.Fprintf(w, "%8s %10d %10d %10d %8d", s.At.Round(100*time.Millisecond), s.Published, s.Stored, s.Committed, s.Lag)
		for _, n := range names {
			if kib, ok := s.RSS[n]; ok {
				fmt.Fprintf(w, " %12.1f", float64(kib)/1024)
			} else {
				fmt.Fprintf(w, " %12s", "-")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "study %s: target %.0f events/s for %s\n", r.Study, r.Rate, r.Duration)
	fmt.Fprintf(w, "published %d (%.0f events/s, %d bytes each on average), failed %d, stored %d, committed %d\n",
		r.Published, r.PublishRate, r.MeanSize, r.Failed, r.Stored, r.Committed)
	if r.Batched > 0 || r.BatchStopped != "" {
		fmt.Fprintf(w, "acknowledged in fast batches: %d", r.Batched)
		if r.BatchStopped != "" {
			fmt.Fprintf(w, " (the rest one by one: %s)", r.BatchStopped)
		}
		fmt.Fprintln(w)
	}
	if r.Consumer == "" {
		fmt.Fprintln(w, "no analyzer consumer measured")
	} else {
		fmt.Fprintf(w, "end to end %.0f events/s (%s from first publish to last commit), drain %s, max lag %d, lag slope %+.1f events/s, sustained %v\n",
			r.EndToEndRate, r.EndToEnd.Round(time.Millisecond), r.Drain.Round(time.Millisecond), r.MaxLag, r.LagSlope, r.Sustained())
	}
	for _, m := range r.Memory {
		if m.Err != "" {
			fmt.Fprintf(w, "memory %s (pid %d): %s\n", m.Name, m.PID, m.Err)
			continue
		}
		over := "publishing"
		if m.JudgedOver > 0 && m.JudgedOver < r.Duration {
			over = fmt.Sprintf("the first %s, while the stream stored events", m.JudgedOver.Round(time.Second))
		}
		fmt.Fprintf(w, "memory %s (pid %d): peak %.1f MiB (VmHWM); judged over %s: RSS %.1f at start, %.1f at 1/4, %.1f at 1/2, %.1f at the end (MiB); slope of its peaks %+.2f MiB/min in the first half, %+.2f ± %.2f (95%%) in the second, of its floors %+.2f and %+.2f ± %.2f: %s\n",
			m.Name, m.PID, mib(m.PeakKiB), over, mib(m.StartKiB), mib(m.QuarterKiB), mib(m.HalfKiB), mib(m.EndKiB), m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth,
			m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.Verdict)
	}
	for _, c := range r.CPU {
		if c.Err != "" {
			fmt.Fprintf(w, "cpu %s: %s\n", c.Name, c.Err)
			continue
		}
		fmt.Fprintf(w, "cpu %s: %.1f s while publishing (%.2f cores), %.1f s until committed, %.1f µs per event published\n",
			c.Name, c.Publishing.Seconds(), c.Cores, c.Total.Seconds(), c.PerEvent)
	}
	if len(r.Memory) > 0 {
		fmt.Fprintf(w, "memory bounded (every watched process: second-half slope, with its 95%% interval, <= %.0f MiB/min or <= %.2f x the first half's): %v\n",
			FlatSlope, BoundedRatio, r.MemoryBounded())
	}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}
