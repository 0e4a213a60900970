package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// cutOff passes the first n events to inner, then fails every Emit: the process running the
// attempt was killed after n of its events were stored.
type cutOff struct {
	inner harness.Emitter
	n     int
}

var errKilled = errors.New("killed")

func (c *cutOff) Emit(ctx context.Context, p events.Payload) error {
	if c.n == 0 {
		return errKilled
	}
	c.n--
	return c.inner.Emit(ctx, p)
}

// storeAttempt1 runs the job as attempt 1 of a worker that is gone, storing its first keep
// events (every event when keep < 0), and waits until JetStream has acknowledged them.
func storeAttempt1(t *testing.T, e *env, ctx context.Context, job study.Job, keep int) {
	t.Helper()
	spec, err := worker.RunSpec(&job)
	if err != nil {
		t.Fatal(err)
	}
	model, err := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := e.bus.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	var em harness.Emitter = &harness.Sequencer{Study: job.Study, Run: job.Run, Attempt: 1,
		Source: events.Source{Kind: events.SourceHarness, ID: "killed"}, Publish: pub.PublishEvent}
	if keep >= 0 {
		em = &cutOff{inner: em, n: keep}
	}
	_, runErr := harness.Run(ctx, spec, model, em)
	if keep < 0 && runErr != nil {
		t.Fatal(runErr)
	}
	if keep >= 0 && !errors.Is(runErr, errKilled) {
		t.Fatalf("cut-off run returned %v, want %v", runErr, errKilled)
	}
	if err := pub.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestForgottenDeliveryCountDoesNotRepeatAttempt1: a single nats-server killed mid-study can
// forget a job's delivery count, so the job comes back as its first delivery (NumDelivered 1)
// although an attempt 1 of its run is stored, cut off by the kill. The job is delivered here for
// the first time after such an attempt 1 was stored: the worker must run it as attempt 2, never
// as a second attempt 1 (which would store two different events at (run, 1, seq)).
func TestForgottenDeliveryCountDoesNotRepeatAttempt1(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "forgot")
	const kept = 3
	storeAttempt1(t, e, ctx, job, kept)

	// The cut-off attempt's events are fresh: the worker first waits for it as for a live
	// attempt, for up to its ack wait, before it gives it up and runs attempt 2.
	w := e.startWorker(worker.Config{ID: "restarted", AckWait: time.Second})
	waitFor(t, ctx, "the job to be run", func() bool { return w.Stats().Acked.Load() == 1 })
	if n := w.Stats().AlreadyRecorded.Load(); n != 0 {
		t.Errorf("AlreadyRecorded = %d for a run whose only stored attempt was cut off", n)
	}
	hs := histories(t, e.readStudy(ctx, "forgot")) // fails on a repeated (run, attempt, seq)
	if len(hs) != 2 {
		t.Fatalf("attempts %v, want the cut-off 1 and the re-run 2", keys(hs))
	}
	a1 := hs[attemptKey{job.Run, 1}]
	if len(a1) != kept || a1[0].Source.ID != "killed" {
		t.Errorf("attempt 1 has %d events (first from %+v), want the %d stored before the kill", len(a1), a1[0].Source, kept)
	}
	r, err := events.Fold(hs[attemptKey{job.Run, 2}])
	if err != nil || !r.Done() || r.Finished.Status == events.StatusAborted {
		t.Fatalf("attempt 2 = %+v, %v; want a finished run", r.Finished, err)
	}
	if n := e.streamCount(ctx, events.JobsStream, ""); n != 0 {
		t.Errorf("%d jobs left", n)
	}
}

// TestFirstDeliveryOfRecordedRunIsNotRerun: the kill came after every event of attempt 1 was
// stored but before the job's ack, and the server forgot the delivery: the job's first
// delivery (as the consumer now counts) is acknowledged without re-running.
func TestFirstDeliveryOfRecordedRunIsNotRerun(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "forgotack")
	storeAttempt1(t, e, ctx, job, -1)

	w := e.startWorker(worker.Config{ID: "restarted"})
	waitFor(t, ctx, "the job to be settled", func() bool { return w.Stats().AlreadyRecorded.Load() == 1 })
	if n := w.Stats().Acked.Load(); n != 0 {
		t.Errorf("the worker re-ran a recorded run (%d acked)", n)
	}
	hs := histories(t, e.readStudy(ctx, "forgotack"))
	if len(hs) != 1 || len(hs[attemptKey{job.Run, 1}]) == 0 {
		t.Errorf("attempts %v, want attempt 1 only", keys(hs))
	}
	if n := e.streamCount(ctx, events.JobsStream, ""); n != 0 {
		t.Errorf("%d jobs left", n)
	}
}
