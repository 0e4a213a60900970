package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/prometheus/client_golang/prometheus"
)

// stepClock wraps a model and measures the harness's own time between model calls: from the
// return of one call to the start of the next (validation, tool execution, the fold and the
// hand-off of every event to the publisher), and from the last call to the end of the run.
type stepClock struct {
	inner llm.Model
	mu    sync.Mutex
	last  time.Time
	steps []time.Duration
}

func (c *stepClock) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	c.mu.Lock()
	if !c.last.IsZero() {
		c.steps = append(c.steps, time.Since(c.last))
	}
	c.mu.Unlock()
	resp, err := c.inner.Chat(ctx, req)
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
	return resp, err
}

// end closes a run: the time from its last model call to Run's return is a step too.
func (c *stepClock) end() {
	c.mu.Lock()
	if !c.last.IsZero() {
		c.steps = append(c.steps, time.Since(c.last))
	}
	c.last = time.Time{}
	c.mu.Unlock()
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func benchPlan(b *testing.B, name string, runs int) *study.Plan {
	b.Helper()
	s := &study.Spec{
		Name: name, Tasks: []string{"credit_ecl", "renal_dosing", "aml_screening"}, Models: []string{"sim-steady", "sim-wobbly"},
		Conditions: []string{"baseline", "harness", "harness_sp"}, Runs: max(1, (runs+17)/18),
		Endpoints: map[string]study.Endpoint{"sim": {Sim: true}}, Seeds: study.Seeds{Base: 1},
		TaskInputs: map[string][]int{"aml_screening": {1}},
	}
	s.Normalize()
	p, err := study.Expand(s)
	if err != nil {
		b.Fatal(err)
	}
	p.Jobs = p.Jobs[:runs]
	return p
}

// sweep is the number of runs per benchmark iteration: one run of each of the research
// matrix's 18 cells, so that even -benchtime 3x gives percentiles over hundreds of steps.
const sweep = 18

// benchEnv starts an embedded nats-server and the simulated models, answering at once on
// loopback at url; both stop when b ends.
func benchEnv(b *testing.B) (srv *bustest.Server, url string) {
	b.Helper()
	srv = bustest.NewServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	url, wait, err := simllm.Serve(ctx, "", simllm.Config{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); _ = wait() })
	return srv, url
}

// BenchmarkStepOverhead measures the harness's overhead per step with the simulated models
// answering at once: each iteration is one sweep of the research matrix (18 runs) through the
// worker's event path (numbering, encoding and validation, fold, publish) to a real embedded
// JetStream. It reports the
// p50 and p99 of the per-step overhead, the per-event emit cost, and the time JetStream takes
// to acknowledge a run's events after its last one.
func BenchmarkStepOverhead(b *testing.B) {
	srv, url := benchEnv(b)
	bs := srv.Connect(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := New(bs, Config{ID: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	inner, err := w.clients.model(study.JobEndpoint{Name: "sim", Sim: true}, url)
	if err != nil {
		b.Fatal(err)
	}
	clock := &stepClock{inner: inner}
	plan := benchPlan(b, "benchsteps", sweep*4)
	var emits []time.Duration
	var ackWaits []time.Duration
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	for i := 0; i < b.N*sweep; i++ {
		job := plan.Jobs[i%len(plan.Jobs)]
		job.Run = fmt.Sprintf("%s-%d", job.Run, i) // a fresh run id per iteration
		spec, err := RunSpec(&job)
		if err != nil {
			b.Fatal(err)
		}
		a, err := w.newAttempt(&job, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		em := harness.EmitterFunc(func(ctx context.Context, p events.Payload) error {
			t0 := time.Now()
			err := a.Emit(ctx, p)
			emits = append(emits, time.Since(t0))
			return err
		})
		if _, err := harness.Run(ctx, spec, clock, em); err != nil {
			b.Fatal(err)
		}
		clock.end()
		t0 := time.Now()
		if err := a.pub.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		ackWaits = append(ackWaits, time.Since(t0))
	}
	cpu1, _ := processCPU()
	b.StopTimer()
	if cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N*sweep), "cpu-ms/run")
	}
	steps := slices.Clone(clock.steps)
	slices.Sort(steps)
	slices.Sort(emits)
	slices.Sort(ackWaits)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(percentile(steps, 0.50)), "µs/step-p50")
	b.ReportMetric(us(percentile(steps, 0.99)), "µs/step-p99")
	b.ReportMetric(us(percentile(emits, 0.50)), "µs/event-p50")
	b.ReportMetric(us(percentile(emits, 0.99)), "µs/event-p99")
	b.ReportMetric(us(percentile(ackWaits, 0.50)), "µs/run-ackwait-p50")
	b.ReportMetric(float64(len(steps))/float64(b.N*sweep), "steps/run")
	b.ReportMetric(float64(len(emits))/float64(b.N*sweep), "events/run")
}

// BenchmarkWorkerThroughput runs b.N sweeps of the research matrix (18 jobs each) through one
// worker against the simulated models answering at once, and reports runs per second. The
// worker, the simulated models and nats-server share this process and its cores.
func BenchmarkWorkerThroughput(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			srv, url := benchEnv(b)
			bs := srv.Connect(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			name := fmt.Sprintf("tput%d", benchSeq.Add(1))
			p := benchPlan(b, name, b.N*sweep)
			if _, err := study.Submit(ctx, bs, p, "bench"); err != nil {
				b.Fatal(err)
			}
			w, err := New(srv.Connect(b), Config{ID: "bench", Concurrency: conc, SimBaseURL: url,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FetchWait: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			b.ResetTimer()
			cpu0, cpuOK := processCPU()
			start := time.Now()
			go func() { done <- w.Run(wctx) }()
			for w.stats.Acked.Load() < int64(b.N*sweep) {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			cpu1, _ := processCPU()
			b.StopTimer()
			stop()
			<-done
			b.ReportMetric(float64(b.N*sweep)/elapsed.Seconds(), "runs/s")
			if cpuOK {
				// Worker, simulated models and nats-server together: the whole cost of a run.
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N*sweep), "cpu-ms/run")
			}
		})
	}
}

var benchSeq atomic.Int64

// BenchmarkLastAttempt measures the lookup every delivery makes before running its job: the
// run's latest stored run.started (see lastAttempt), for a run with none (a first delivery)
// and for a run with one.
func BenchmarkLastAttempt(b *testing.B) {
	srv := bustest.NewServer(b)
	bs := srv.Connect(b)
	w, err := New(bs, Config{ID: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	job := benchPlan(b, "benchlast", 1).Jobs[0]
	a, err := w.newAttempt(&job, 3, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := a.record(startedOf(&job), events.RunFinished{Status: events.StatusFailed, Error: "bench"}, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  string
		want int
	}{{"none", job.Run + "x", 0}, {"stored", job.Run, 3}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				n, err := w.lastAttempt(ctx, job.Study, c.run)
				if err != nil || n != c.want {
					b.Fatalf("lastAttempt = %d, %v; want %d", n, err, c.want)
				}
			}
		})
	}
}
