package worker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// TestEndToEnd runs a study of 3 conditions × 2 personas × 2 tasks × N = 20 (240 runs) with two
// workers on one embedded nats-server and the simulated models on loopback.
func TestEndToEnd(t *testing.T) {
	noLeaks(t)
	runs := 20
	if testing.Short() {
		runs = 3
	}
	e := newEnv(t, 0)
	ctx := testCtx(t, 120*time.Second)
	p := simSpec(t, "e2e", []string{"credit_ecl", "aml_screening"}, []string{"baseline", "harness", "harness_sp"}, runs)
	e.submit(ctx, p)
	w1 := e.startWorker(worker.Config{ID: "w1", Concurrency: 4})
	w2 := e.startWorker(worker.Config{ID: "w2", Concurrency: 4})

	want := uint64(len(p.Jobs))
	waitFor(t, ctx, "every run to finish", func() bool { return e.finished(ctx, "e2e") >= want })
	waitFor(t, ctx, "every job to be acknowledged", func() bool {
		return w1.Stats().Acked.Load()+w2.Stats().Acked.Load() >= int64(want)
	})
	if n := e.streamCount(ctx, events.JobsStream, ""); n != 0 {
		t.Errorf("%d jobs left in the queue", n)
	}
	if a1, a2 := w1.Stats().Acked.Load(), w2.Stats().Acked.Load(); a1 == 0 || a2 == 0 {
		t.Errorf("acked by w1 %d, w2 %d: want both workers to take jobs", a1, a2)
	}

	evs := e.readStudy(ctx, "e2e")
	hs := histories(t, evs)
	var finishedRuns []string
	statuses := map[string]int{}
	perCondition := map[string]int{}
	for k, h := range hs {
		r, err := events.Fold(h)
		if err != nil {
			t.Errorf("run %s attempt %d does not fold: %v", k.run, k.attempt, err)
			continue
		}
		if !r.Done() {
			t.Errorf("run %s attempt %d has no run.finished", k.run, k.attempt)
			continue
		}
		if h[0].Source.Kind != events.SourceHarness || (h[0].Source.ID != "w1" && h[0].Source.ID != "w2") {
			t.Errorf("run %s source = %+v", k.run, h[0].Source)
		}
		finishedRuns = append(finishedRuns, k.run)
		statuses[r.Finished.Status]++
		perCondition[r.Started.Condition]++
	}
	slices.Sort(finishedRuns)
	if !slices.Equal(finishedRuns, sortedRuns(p)) {
		t.Errorf("finished %d runs (%d attempts), want exactly the %d submitted runs once each", len(slices.Compact(slices.Clone(finishedRuns))), len(finishedRuns), len(p.Jobs))
	}
	for _, c := range []string{"baseline", "harness", "harness_sp"} {
		if perCondition[c] != 4*runs {
			t.Errorf("condition %s: %d runs, want %d", c, perCondition[c], 4*runs)
		}
	}
	if defined := e.streamCount(ctx, events.EventsStream, "ditto.events.e2e._study.study.defined"); defined != 1 {
		t.Errorf("%d study.defined events, want 1", defined)
	}
	outcomes, err := study.Outcomes(ctx, e.bus, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outcomes {
		n := 0
		for _, c := range o.Statuses {
			n += c
		}
		if n != o.Runs {
			t.Errorf("Outcomes: cell %s/%s/%s has %d outcomes, want %d", o.Task, o.Model, o.Condition, n, o.Runs)
		}
	}
	if pr, err := study.GetProgress(ctx, e.bus, p); err != nil || !pr.Done() {
		t.Errorf("GetProgress = %+v, %v; want done", pr, err)
	}
	t.Logf("%d runs, %d events, statuses %v", len(finishedRuns), len(evs), statuses)
}

// TestCrashRedelivers kills a worker mid-run (its connection closed without acks): the job is
// redelivered, the run completes once, and the interrupted attempt is visible as such.
func TestCrashRedelivers(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	p := simSpec(t, "crash", []string{"credit_ecl"}, []string{"harness_sp"}, 1)
	p.Jobs = p.Jobs[:1]
	p.Defined.Cells = p.Defined.Cells[:1]
	p.Defined.Cells[0].Runs, p.Defined.ExpectedRuns = 1, 1
	e.submit(ctx, p)
	run := p.Jobs[0].Run

	inner, err := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	if err != nil {
		t.Fatal(err)
	}
	bm := &blockingModel{inner: inner, n: 3, blocked: make(chan struct{}), release: make(chan struct{})}
	const ackWait = time.Second
	doomed := e.startWorker(worker.Config{ID: "doomed", Concurrency: 1, AckWait: ackWait,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return bm, nil }})
	select {
	case <-bm.blocked:
	case <-ctx.Done():
		t.Fatal("the first worker never reached its third model call")
	}
	startedSubj := "ditto.events.crash." + run + ".run.started"
	waitFor(t, ctx, "attempt 1's first events to be stored", func() bool { return e.streamCount(ctx, events.EventsStream, startedSubj) == 1 })

	doomed.bus.Conn().Close() // the crash: no ack, no nak, no further event
	close(bm.release)
	select {
	case <-doomed.done:
		if doomed.err == nil {
			t.Error("the crashed worker's Run returned nil, want the connection error")
		}
	case <-ctx.Done():
		t.Fatal("the crashed worker did not stop")
	}

	w2 := e.startWorker(worker.Config{ID: "survivor", Concurrency: 1, AckWait: ackWait})
	waitFor(t, ctx, "the run to finish", func() bool { return e.finished(ctx, "crash") >= 1 })
	waitFor(t, ctx, "the job to be acknowledged", func() bool { return w2.Stats().Acked.Load() == 1 })

	hs := histories(t, e.readStudy(ctx, "crash"))
	if len(hs) != 2 {
		t.Fatalf("attempts stored: %v, want 2", keys(hs))
	}
	a1, err1 := events.Fold(hs[attemptKey{run, 1}])
	a2, err2 := events.Fold(hs[attemptKey{run, 2}])
	if err1 != nil || err2 != nil {
		t.Fatalf("fold attempt 1: %v; attempt 2: %v", err1, err2)
	}
	if a1.Done() || a1.Started == nil {
		t.Errorf("attempt 1: started %v, finished %v; want started and unfinished (aborted by the crash)", a1.Started != nil, a1.Done())
	}
	if !a2.Done() || hs[attemptKey{run, 2}][0].Source.ID != "survivor" {
		t.Errorf("attempt 2 finished %v by %s, want finished by survivor", a2.Done(), hs[attemptKey{run, 2}][0].Source.ID)
	}
	if n := e.finished(ctx, "crash"); n != 1 {
		t.Errorf("%d run.finished events, want 1", n)
	}
	if n := e.streamCount(ctx, events.JobsStream, ""); n != 0 {
		t.Errorf("%d jobs left", n)
	}
}

func keys(m map[attemptKey][]events.Envelope) []attemptKey {
	var out []attemptKey
	for k := range m {
		out = append(out, k)
	}
	return out
}
