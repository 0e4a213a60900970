package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// The broker redelivers a job whose worker is alive when that worker's in-progress acks do not
// reach it for an ack wait (a consumer leader change in a cluster loses them). These tests
// make that happen on one embedded server, deterministically: the first worker holds the job
// with a 30 s ack wait (in-progress acks every 10 s), then a second worker starts with a 1 s
// ack wait, which it sets on the shared consumer, so the broker hands the job to it after 1 s
// while the first is still at work. The first is held at a chosen point until the second has
// recorded the run.

// gatedModels is a ModelFactory that closes picked when a job reaches it and returns the model
// only once release is closed: the worker has read the run and chosen its attempt, and has not
// yet stored anything.
type gatedModels struct {
	simURL  string
	picked  chan struct{}
	release chan struct{}
}

func (g *gatedModels) models(ep study.JobEndpoint, _ string) (llm.Model, error) {
	close(g.picked)
	<-g.release
	return llm.NewOpenAI(llm.Config{BaseURL: g.simURL})
}

// waitSettled waits until the first worker is done with its attempt: it lost its claim, or
// (without claims) it stored a second run.finished.
func waitSettled(t *testing.T, e *env, ctx context.Context, w1 *running, studyName string) {
	t.Helper()
	waitFor(t, ctx, "the first worker's attempt to end", func() bool {
		return w1.Stats().Superseded.Load() > 0 || e.finished(ctx, studyName) > 1
	})
}

// finishedAttempts returns the attempts of the run that stored a run.finished other than
// aborted, and the source of each.
func finishedAttempts(t *testing.T, hs map[attemptKey][]events.Envelope, run string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for k, h := range hs {
		if k.run != run {
			continue
		}
		for _, e := range h {
			if f, ok := e.Payload.(events.RunFinished); ok && f.Status != events.StatusAborted {
				out[k.attempt] = e.Source.ID
			}
		}
	}
	return out
}

// TestStaleDeliveryCannotClaimARun: two deliveries of one job both read the run before either
// stored anything. The later one runs the job; the earlier one, resuming after that, must not
// run it too: its run.started claims the run only if nothing was stored on it since it read it.
func TestStaleDeliveryCannotClaimARun(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	job := oneJob(t, e, ctx, "staleclaim")
	g := &gatedModels{simURL: e.simURL, picked: make(chan struct{}), release: make(chan struct{})}
	w1 := e.startWorker(worker.Config{ID: "first", Concurrency: 1, AckWait: 30 * time.Second, Models: g.models})
	waitClosed(t, ctx, g.picked, "the first worker to pick its attempt")

	w2 := e.startWorker(worker.Config{ID: "second", Concurrency: 1, AckWait: time.Second})
	waitFor(t, ctx, "the redelivered job to be run", func() bool { return w2.Stats().Acked.Load() == 1 })
	close(g.release)
	waitSettled(t, e, ctx, w1, "staleclaim")

	hs := histories(t, e.readStudy(ctx, "staleclaim"))
	fin := finishedAttempts(t, hs, job.Run)
	if len(fin) != 1 {
		t.Fatalf("finished attempts %v (by worker), want one", fin)
	}
	for k, h := range hs {
		if h[0].Source.ID == "first" {
			t.Errorf("the stale delivery stored %d events as attempt %d", len(h), k.attempt)
		}
	}
	if n := w1.Stats().Superseded.Load(); n != 1 {
		t.Errorf("Superseded = %d, want 1", n)
	}
}

// TestSupersededAttemptCannotRecordItsOutcome: the first worker's attempt is alive but silent
// (a model call longer than the ack wait) when its job is redelivered; the second worker gives
// it up and runs the next attempt. When the first attempt's model answers at last, its outcome
// must not be recorded: its run.finished is stored only while its run.started is the run's
// latest. The run ends with one finished attempt; the first reads as aborted.
func TestSupersededAttemptCannotRecordItsOutcome(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	job := oneJob(t, e, ctx, "supersede")
	inner, err := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	if err != nil {
		t.Fatal(err)
	}
	bm := &blockingModel{inner: inner, n: 2, blocked: make(chan struct{}), release: make(chan struct{})}
	w1 := e.startWorker(worker.Config{ID: "first", Concurrency: 1, AckWait: 30 * time.Second,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return bm, nil }})
	waitClosed(t, ctx, bm.blocked, "the first worker's second model call")

	w2 := e.startWorker(worker.Config{ID: "second", Concurrency: 1, AckWait: time.Second})
	waitFor(t, ctx, "the next attempt to be recorded", func() bool { return w2.Stats().Acked.Load() == 1 })
	close(bm.release)
	waitSettled(t, e, ctx, w1, "supersede")

	hs := histories(t, e.readStudy(ctx, "supersede"))
	fin := finishedAttempts(t, hs, job.Run)
	if len(fin) != 1 || fin[2] != "second" {
		t.Fatalf("finished attempts %v (by worker), want attempt 2 by the second worker only", fin)
	}
	a1 := hs[attemptKey{job.Run, 1}]
	if len(a1) == 0 || a1[0].Source.ID != "first" {
		t.Fatalf("attempt 1 = %d events, want the first worker's", len(a1))
	}
	if n := w1.Stats().Superseded.Load(); n != 1 {
		t.Errorf("Superseded = %d, want 1", n)
	}
	if w1.Stats().Acked.Load() != 0 {
		t.Errorf("the superseded attempt acknowledged its job as run")
	}
}
