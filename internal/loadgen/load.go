package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Run publishes generated runs on b at cfg.Rate events per second for cfg.Duration, then, with a
// consumer to watch, waits up to cfg.DrainTimeout for it to commit everything. The Report is
// returned even with an error (ErrNotDrained, publish failures, ctx ending).
func Run(ctx context.Context, b *bus.Bus, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults(time.Now())
	// The templates are made before the clock starts: making them costs seconds.
	gen, err := newWireRuns(cfg.Study, cfg.Seed, templateRuns)
	if err != nil {
		return nil, err
	}
	stream, err := b.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	// This run's events are those after base in the stream: the analyzer has committed k of
	// them when its acknowledgement floor is base+k (the consumer acknowledges in stream order).
	base := info.State.LastSeq
	m := &meter{cfg: cfg, stream: stream, base: base, peak: map[string]ProcMemory{}}
	m.cpu[0] = m.readCPU()
	start := time.Now()
	m.start = start
	pub, err := newPublisher(ctx, b, cfg)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	rep := &Report{Study: cfg.Study, Rate: cfg.Rate, Duration: cfg.Duration, Began: start.UTC(), Consumer: cfg.Consumer}

	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.sampleEvery(sctx, cfg.Sample) }()
	defer func() {
		stopSampling()
		wg.Wait()
		m.finish(rep)
	}()

	var bytes atomic.Int64
	perr := publish(ctx, pub, gen, cfg, start, &m.published, &bytes)
	publishEnd := time.Now()
	m.cpu[1], m.publishing = m.readCPU(), publishEnd.Sub(start)
	rep.Published = int(m.published.Load())
	if rep.Published > 0 {
		rep.MeanSize = int(bytes.Load()) / rep.Published
	}
	rep.PublishRate = float64(rep.Published) / publishEnd.Sub(start).Seconds()
	wctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	if err := pub.Wait(wctx); err != nil {
		failed, ok := bus.IsAckError(err)
		if rep.Failed = len(failed); ok && rep.Failed > 0 {
			// The count and the first reason (a full stream or disk says so here), not the
			// thousands of lines of each publish's.
			err = fmt.Errorf("%d publishes not acknowledged; the first: %v", rep.Failed, failed[0])
		}
		perr = errors.Join(perr, fmt.Errorf("loadgen: %w", err))
	}
	if bp, ok := pub.(*bus.BatchPublisher); ok {
		rep.Batched = int(bp.Batched())
		if err := bp.Stopped(); err != nil {
			rep.BatchStopped = err.Error()
		}
	}
	if perr != nil || cfg.Consumer == "" {
		return rep, perr
	}
	// Wait for the analyzer to commit everything the stream stored.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := m.observe(wctx)
		if err == nil && s.Stored == rep.Published-rep.Failed && s.Committed >= s.Stored {
			rep.Drained = true
			done := time.Now()
			rep.Drain = done.Sub(publishEnd)
			rep.EndToEnd = done.Sub(start)
			rep.EndToEndRate = float64(s.Committed) / rep.EndToEnd.Seconds()
			rep.Stored, rep.Committed = s.Stored, s.Committed
			m.mu.Lock()
			m.samples = append(m.samples, s)
			m.mu.Unlock()
			return rep, nil
		}
		select {
		case <-wctx.Done():
			return rep, fmt.Errorf("%w within %s of the end of publishing", ErrNotDrained, cfg.DrainTimeout)
		case <-tick.C:
		}
	}
}

// publisher is bus.Publisher or bus.BatchPublisher.
type publisher interface {
	Publish(ctx context.Context, subject, msgID string, data []byte) error
	Wait(ctx context.Context) error
}

// newPublisher returns the publisher cfg asks for. Asynchronous publishing, as `nats bench js
// pub async` does, bounded by MaxInFlight: the generator must not be what limits the rate.
// Failures (including acknowledgement timeouts) are reported by Wait.
func newPublisher(ctx context.Context, b *bus.Bus, cfg Config) (publisher, error) {
	opts := []bus.PublisherOption{bus.WithMaxInFlight(cfg.MaxInFlight), bus.WithAckTimeout(30 * time.Second)}
	if cfg.Batch == 0 {
		return b.NewPublisher(opts...)
	}
	return b.NewBatchPublisher(ctx, cfg.Stream, cfg.Batch, opts...)
}

// templateRuns is how many distinct runs the generator makes before it reuses their payloads.
const templateRuns = 256

// publish paces the events: by time t since start, rate·t events have been handed over.
// Several runs are open at once and their events interleave.
func publish(ctx context.Context, pub publisher, gen *wireRuns, cfg Config, start time.Time, published, bytes *atomic.Int64) error {
	var err error
	pick := rand.New(rand.NewPCG(cfg.Seed, 0x91c))
	open := make([][]wireEvent, cfg.OpenRuns)
	for i := range open {
		if open[i], err = gen.next(start); err != nil {
			return err
		}
	}
	n := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= cfg.Duration {
			return nil
		}
		due := int(cfg.Rate * elapsed.Seconds())
		for ; n < due; n++ {
			// A publisher that cannot keep up falls behind the schedule; it must still stop
			// at the end of the duration rather than publish the whole backlog of the plan.
			if n%64 == 0 && time.Since(start) >= cfg.Duration {
				return nil
			}
			i := pick.IntN(len(open))
			e := open[i][0]
			if open[i] = open[i][1:]; len(open[i]) == 0 {
				if open[i], err = gen.next(time.Now()); err != nil {
					return err
				}
			}
			if err := pub.Publish(ctx, e.subject, e.id, e.data); err != nil {
				return ctx.Err()
			}
			published.Add(1)
			bytes.Add(int64(len(e.data)))
		}
		// Sleep until the next event is due, but wake often enough to keep bursts small.
		next := time.Duration(float64(n+1) / cfg.Rate * float64(time.Second))
		wait := min(next-time.Since(start), 5*time.Millisecond)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(wait, 0)):
		}
	}
}

// meter samples the stream, the analyzer's consumer and the watched processes.
type meter struct {
	cfg       Config
	stream    *bus.Stream
	base      uint64
	start     time.Time
	published atomic.Int64

	mu      sync.Mutex
	samples []Sample
	peak    map[string]ProcMemory
	memErr  map[string]error

	// cpu holds the CPU time of each watched process and of the machine (MachineCPU) at the
	// first publish, at the end of publishing and at the end of the run; publishing is the
	// publishing time.
	cpu        [3]map[string]cpuRead
	publishing time.Duration
}

// cpuRead is one reading of a process's CPU time.
type cpuRead struct {
	t   time.Duration
	err error
}

// readCPU reads the CPU time of every watched process and of the machine.
func (m *meter) readCPU() map[string]cpuRead {
	out := map[string]cpuRead{}
	for name, pid := range m.cfg.Watch {
		t, err := ReadProcCPU(pid)
		out[name] = cpuRead{t, err}
	}
	t, err := ReadMachineCPU()
	out[MachineCPU] = cpuRead{t, err}
	return out
}

// cpuReport turns the three readings into the report's CPU entries, the watched processes by
// name and the machine last.
func (m *meter) cpuReport(published int) []CPU {
	names := make([]string, 0, len(m.cpu[0]))
	for name := range m.cpu[0] {
		if name != MachineCPU {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []CPU
	for _, name := range append(names, MachineCPU) {
		r0, r1, r2 := m.cpu[0][name], m.cpu[1][name], m.cpu[2][name]
		if err := errors.Join(r0.err, r1.err, r2.err); err != nil {
			out = append(out, CPU{Name: name, PID: m.cfg.Watch[name], Err: err.Error()})
			continue
		}
		out = append(out, cpuUse(name, m.cfg.Watch[name], r0.t, r1.t, r2.t, m.publishing, published))
	}
	return out
}

// observe reads the stream's last sequence and the consumer's acknowledgement floor.
func (m *meter) observe(ctx context.Context) (Sample, error) {
	s := Sample{At: time.Since(m.start), Published: int(m.published.Load())}
	info, err := m.stream.Info(ctx)
	if err != nil {
		return s, err
	}
	last := info.State.LastSeq
	s.Stored = int(last - m.base)
	if m.cfg.Consumer == "" {
		return s, nil
	}
	var floor uint64
	cinfo, err := m.stream.ConsumerInfo(ctx, m.cfg.Consumer)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		// The analyzer has not started yet: nothing committed.
	case err != nil:
		return s, err
	default:
		floor = cinfo.AckFloor.Stream
	}
	if floor > m.base {
		s.Committed = int(floor - m.base)
	}
	if last > floor {
		s.Lag = int(last - floor)
	}
	return s, nil
}

func (m *meter) sampleEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := m.observe(ctx)
		if err != nil {
			continue // a leader election; the next sample will do
		}
		s.RSS = map[string]int64{}
		m.mu.Lock()
		for name, pid := range m.cfg.Watch {
			pm, err := ReadProcMemory(pid)
			if err != nil {
				if m.memErr == nil {
					m.memErr = map[string]error{}
				}
				m.memErr[name] = err
				continue
			}
			s.RSS[name] = pm.RSS
			if pm.Peak > m.peak[name].Peak {
				m.peak[name] = pm
			}
		}
		m.samples = append(m.samples, s)
		m.mu.Unlock()
	}
}

// finish fills in the report's samples, lag figures and memory.
func (m *meter) finish(rep *Report) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cpu[1] != nil { // publishing ended (not an error before it began)
		m.cpu[2] = m.readCPU()
		rep.CPU = m.cpuReport(rep.Published)
	}
	for name, pid := range m.cfg.Watch {
		if pm, err := ReadProcMemory(pid); err == nil && pm.Peak > m.peak[name].Peak {
			m.peak[name] = pm
		}
		mem := memoryTrend(Memory{Name: name, PID: pid, PeakKiB: m.peak[name].Peak}, m.samples, loadTime(m.samples, m.cfg.Duration), nil)
		if mem.PeakKiB == 0 && m.memErr[name] != nil {
			mem.Err = m.memErr[name].Error()
		}
		rep.Memory = append(rep.Memory, mem)
	}
	sort.Slice(rep.Memory, func(i, j int) bool { return rep.Memory[i].Name < rep.Memory[j].Name })
	rep.Samples = m.samples
	var xs, ys []float64
	for _, s := range m.samples {
		rep.MaxLag = max(rep.MaxLag, s.Lag)
		if s.At >= m.cfg.Duration/2 && s.At <= m.cfg.Duration {
			xs = append(xs, s.At.Seconds())
			ys = append(ys, float64(s.Lag))
		}
	}
	rep.LagSlope = slope(xs, ys)
	if n := len(m.samples); n > 0 && !rep.Drained {
		last := m.samples[n-1]
		rep.Stored, rep.Committed = last.Stored, last.Committed
	}
}
