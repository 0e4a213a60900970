package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

// env is one embedded nats-server and the simulated models on loopback.
type env struct {
	t      *testing.T
	srv    *bustest.Server
	bus    *bus.Bus // the producer's and the test's connection
	simURL string
}

func newEnv(t *testing.T, latencyScale float64) *env {
	t.Helper()
	srv := bustest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	url, wait, err := simllm.Serve(ctx, "", simllm.Config{LatencyScale: latencyScale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = wait() })
	return &env{t: t, srv: srv, bus: srv.Connect(t), simURL: url}
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var quiet = slog.New(slog.NewTextHandler(logOut(), &slog.HandlerOptions{Level: slog.LevelDebug}))

func logOut() io.Writer {
	if os.Getenv("DITTO_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// running is a worker started by startWorker.
type running struct {
	*worker.Worker
	bus    *bus.Bus
	cancel context.CancelFunc // begins the worker's shutdown
	done   chan struct{}      // closed when Run has returned
	err    error              // Run's result, once done is closed
}

// startWorker runs a worker on its own connection until the test ends.
func (e *env) startWorker(cfg worker.Config) *running {
	e.t.Helper()
	b := e.srv.Connect(e.t)
	if cfg.SimBaseURL == "" {
		cfg.SimBaseURL = e.simURL
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 250 * time.Millisecond // quick shutdowns
	}
	w, err := worker.New(b, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Worker: w, bus: b, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = w.Run(ctx); close(r.done) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			e.t.Errorf("worker %s did not stop", w.ID())
		}
	})
	return r
}

// spec builds a study spec on the simulated models.
func simSpec(t *testing.T, name string, tasks, conditions []string, runs int) *study.Plan {
	t.Helper()
	s := &study.Spec{
		Name: name, Tasks: tasks, Models: []string{"sim-steady", "sim-wobbly"}, Conditions: conditions, Runs: runs,
		Endpoints: map[string]study.Endpoint{"sim": {Sim: true}},
		Seeds:     study.Seeds{Base: 7},
	}
	s.Normalize()
	p, err := study.Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) submit(ctx context.Context, p *study.Plan) {
	e.t.Helper()
	if _, err := study.Submit(ctx, e.bus, p, "test"); err != nil {
		e.t.Fatal(err)
	}
}

// streamCount returns the messages of a stream matching filter ("" for all).
func (e *env) streamCount(ctx context.Context, stream, filter string) uint64 {
	e.t.Helper()
	s, err := e.bus.Stream(ctx, stream)
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := s.Count(ctx, filter)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// finished counts the study's run.finished events.
func (e *env) finished(ctx context.Context, studyName string) uint64 {
	return e.streamCount(ctx, events.EventsStream, fmt.Sprintf("%s.%s.*.%s", events.EventsPrefix, studyName, events.TypeRunFinished))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readStudy returns every stored event of a study, decoded, in stream order.
func (e *env) readStudy(ctx context.Context, studyName string) []events.Envelope {
	e.t.Helper()
	filter, _ := events.StudyEventsSubject(studyName)
	s, err := e.bus.Stream(ctx, events.EventsStream)
	if err != nil {
		e.t.Fatal(err)
	}
	want, err := s.Count(ctx, filter)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []events.Envelope
	err = s.Read(ctx, filter, want, func(m jetstream.Msg) error {
		ev, err := events.Decode(m.Data())
		if err != nil {
			return fmt.Errorf("stored event on %s does not decode: %w\n%s", m.Subject(), err, m.Data())
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

type attemptKey struct {
	run     string
	attempt int
}

// histories groups run events by (run, attempt), each sorted by seq, and fails the test on a
// duplicate event id or (run, attempt, seq).
func histories(t *testing.T, evs []events.Envelope) map[attemptKey][]events.Envelope {
	t.Helper()
	ids := map[string]bool{}
	seqs := map[string]bool{}
	out := map[attemptKey][]events.Envelope{}
	for _, ev := range evs {
		if ids[ev.ID] {
			t.Errorf("event id %s stored twice", ev.ID)
		}
		ids[ev.ID] = true
		if ev.Run == events.StudyRun {
			continue
		}
		k := fmt.Sprintf("%s/%d/%d", ev.Run, ev.Attempt, ev.Seq)
		if seqs[k] {
			t.Errorf("(run, attempt, seq) %s stored twice", k)
		}
		seqs[k] = true
		ak := attemptKey{ev.Run, ev.Attempt}
		out[ak] = append(out[ak], ev)
	}
	for k, h := range out {
		sort.Slice(h, func(i, j int) bool { return h[i].Seq < h[j].Seq })
		out[k] = h
	}
	return out
}

// blockingModel wraps a model and blocks its n-th call (from 1) until release is closed or
// the call's context ends, after closing blocked.
type blockingModel struct {
	inner   llm.Model
	n       int
	mu      sync.Mutex
	calls   int
	blocked chan struct{}
	release chan struct{}
}

func (m *blockingModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return m.calls
}

func (m *blockingModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if m.count() == m.n {
		close(m.blocked)
		select {
		case <-m.release:
		case <-ctx.Done():
			return llm.Response{}, &llm.CallError{Attempts: 1, Err: ctx.Err()}
		}
	}
	return m.inner.Chat(ctx, req)
}

func sortedRuns(p *study.Plan) []string {
	var out []string
	for _, j := range p.Jobs {
		out = append(out, j.Run)
	}
	slices.Sort(out)
	return out
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// noLeaks checks, after every other cleanup of the test, that no goroutine it started is left.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { leaktest.VerifyNone(t, opt) })
}

// waitClosed waits for ch to be closed, failing the test at ctx's deadline.
func waitClosed(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

// assertErroredAtOnce checks that every run of the study was recorded at its first attempt as
// errored, with a permanent cause of kind at endpoint openai whose detail holds each of want,
// and that no job was retried.
func assertErroredAtOnce(t *testing.T, e *env, w *running, studyName string, runs int, kind string, want ...string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	waitFor(t, ctx, "the runs recorded as errored", func() bool { return w.Stats().Errored.Load() == int64(runs) })
	if r := w.Stats().Requeued.Load(); r != 0 {
		t.Errorf("requeued %d jobs; a permanent cause must not be retried", r)
	}
	hs := histories(t, e.readStudy(ctx, studyName))
	if len(hs) != runs {
		t.Fatalf("attempts %v, want one per run", keys(hs))
	}
	for k, h := range hs {
		r, err := events.Fold(h)
		if err != nil || k.attempt != 1 || !r.Done() {
			t.Fatalf("%v: %+v, %v", k, r.Finished, err)
		}
		c := r.Finished.Cause
		if r.Finished.Status != events.StatusErrored || c.Kind != kind || !c.Permanent || c.Endpoint != "openai" {
			t.Errorf("%v: run.finished = %s %#v, want errored, %s, permanent", k, r.Finished.Status, c, kind)
		}
		for _, s := range want {
			if !strings.Contains(c.Detail, s) {
				t.Errorf("%v: cause detail %q does not name %q", k, c.Detail, s)
			}
		}
	}
}
