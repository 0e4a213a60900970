package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// oneJob submits a study of a single run and returns its job.
func oneJob(t *testing.T, e *env, ctx context.Context, name string) study.Job {
	t.Helper()
	p := simSpec(t, name, []string{"renal_dosing"}, []string{"harness"}, 1)
	p.Jobs = p.Jobs[:1]
	p.Defined.Cells = p.Defined.Cells[:1]
	p.Defined.Cells[0].Runs, p.Defined.ExpectedRuns = 1, 1
	e.submit(ctx, p)
	return p.Jobs[0]
}

func TestMalformedJobsAreRejectedAndKept(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	js := bustest.JetStream(t, e.bus)
	if _, err := js.Publish(ctx, "ditto.jobs.junk", []byte("{not a job")); err != nil {
		t.Fatal(err)
	}
	// A job that names itself but asks for a task this build does not know.
	p := simSpec(t, "badtask", []string{"renal_dosing"}, []string{"harness"}, 1)
	bad := p.Jobs[0]
	bad.Task = "tax_return"
	raw, _ := jsonMarshal(bad)
	if _, err := js.Publish(ctx, "ditto.jobs.badtask", raw); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 2})
	waitFor(t, ctx, "both jobs to be rejected", func() bool { return w.Stats().Rejected.Load() == 2 })
	if n := e.streamCount(ctx, events.RejectedJobsStream, ""); n != 2 {
		t.Fatalf("%s holds %d jobs, want 2", events.RejectedJobsStream, n)
	}
	s, err := e.bus.Stream(ctx, events.RejectedJobsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.LastMsg(ctx, events.RejectedJobSubject("badtask"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Header.Get(worker.HeaderReason), "unknown task") || string(msg.Data) != string(raw) {
		t.Errorf("kept job: reason %q, data %s", msg.Header.Get(worker.HeaderReason), msg.Data)
	}
	if _, err := s.LastMsg(ctx, events.RejectedJobSubject("")); err != nil {
		t.Errorf("the undecodable job is not kept: %v", err)
	}
	// The job that named its run is recorded as an errored run of its study (a configuration
	// error: the agent never ran).
	hs := histories(t, e.readStudy(ctx, "badtask"))
	r, err := events.Fold(hs[attemptKey{bad.Run, 1}])
	if err != nil || !r.Done() || r.Finished.Status != events.StatusErrored || r.Finished.Cause.Kind != events.CauseConfig ||
		!strings.Contains(r.Finished.Cause.Detail, "malformed job") {
		t.Errorf("recorded run = %+v, %v; want errored, cause config, with a malformed-job detail", r.Finished, err)
	}
	jobsGone(t, ctx, e)
}

func TestExhaustedJobIsRecordedAsErrored(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "exhaust")
	unreachable := errors.New("endpoint unreachable")
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 1, MaxAttempts: 2, NakDelay: 10 * time.Millisecond,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return nil, unreachable }})
	waitFor(t, ctx, "the job to be exhausted", func() bool { return w.Stats().Exhausted.Load() == 1 })
	if got := w.Stats().Requeued.Load(); got != 2 {
		t.Errorf("requeued %d times, want 2 (MaxAttempts)", got)
	}
	hs := histories(t, e.readStudy(ctx, "exhaust"))
	if len(hs) != 1 {
		t.Fatalf("attempts %v, want only the recorded third", keys(hs))
	}
	r, err := events.Fold(hs[attemptKey{job.Run, 3}])
	// The cause is the real one (the endpoint), not "deliveries exhausted".
	if err != nil || !r.Done() || r.Finished.Status != events.StatusErrored || !strings.Contains(r.Finished.Error, "deliveries exhausted") ||
		r.Finished.Cause.Kind != events.CauseUnreachable || !strings.Contains(r.Finished.Cause.Detail, "endpoint unreachable") {
		t.Fatalf("attempt 3 = %+v, %v; want errored, the endpoint's error as its cause", r.Finished, err)
	}
	if r.Started.Task != job.Task || r.Started.Condition != job.Condition || r.Started.Model != job.Model {
		t.Errorf("recorded run.started = %+v", r.Started)
	}
	jobsGone(t, ctx, e)
}

func TestShutdownAbandonsRunsAfterGrace(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "shutdown")
	inner, err := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	if err != nil {
		t.Fatal(err)
	}
	bm := &blockingModel{inner: inner, n: 2, blocked: make(chan struct{}), release: make(chan struct{})}
	w1 := e.startWorker(worker.Config{ID: "leaving", Concurrency: 1, ShutdownGrace: 200 * time.Millisecond,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return bm, nil }})
	waitClosed(t, ctx, bm.blocked, "the second model call")
	w1.cancel() // SIGTERM
	select {
	case <-w1.done:
		if w1.err != nil {
			t.Errorf("Run after shutdown = %v, want nil", w1.err)
		}
	case <-ctx.Done():
		t.Fatal("worker did not shut down")
	}
	if w1.Stats().Requeued.Load() != 1 || w1.Stats().Acked.Load() != 0 {
		t.Errorf("requeued %d, acked %d; want the job handed back", w1.Stats().Requeued.Load(), w1.Stats().Acked.Load())
	}
	w2 := e.startWorker(worker.Config{ID: "next"})
	waitFor(t, ctx, "the job to be re-run", func() bool { return w2.Stats().Acked.Load() == 1 })

	hs := histories(t, e.readStudy(ctx, "shutdown"))
	a1, err1 := events.Fold(hs[attemptKey{job.Run, 1}])
	a2, err2 := events.Fold(hs[attemptKey{job.Run, 2}])
	if err1 != nil || err2 != nil {
		t.Fatalf("fold: %v, %v", err1, err2)
	}
	if !a1.Done() || a1.Finished.Status != events.StatusAborted {
		t.Errorf("attempt 1 finished %+v, want aborted", a1.Finished)
	}
	if !a2.Done() || a2.Finished.Status == events.StatusAborted {
		t.Errorf("attempt 2 finished %+v, want a real outcome", a2.Finished)
	}
}

func TestInProgressAcksKeepALongRun(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	job := oneJob(t, e, ctx, "long")
	inner, err := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	if err != nil {
		t.Fatal(err)
	}
	// In-progress acks go every ackWait/3, so a stall of about 2/3 ackWait (a goroutine not
	// scheduled, a busy broker) gets the job redelivered: 3 s leaves a loaded machine 2 s, where
	// 1 s left it about 0.67 s.
	const ackWait = 3 * time.Second
	bm := &blockingModel{inner: inner, n: 2, blocked: make(chan struct{}), release: make(chan struct{})}
	w1 := e.startWorker(worker.Config{ID: "slow", Concurrency: 1, AckWait: ackWait,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return bm, nil }})
	waitClosed(t, ctx, bm.blocked, "the slow worker's second model call")
	// A second worker, started once the first holds the job, would get it if it were redelivered.
	w2 := e.startWorker(worker.Config{ID: "eager", Concurrency: 1, AckWait: ackWait})
	time.AfterFunc(3*ackWait, func() { close(bm.release) }) // the model takes 3 ack waits to answer
	waitFor(t, ctx, "the long run to be acked", func() bool { return w1.Stats().Acked.Load() == 1 })
	if w2.Stats().Acked.Load() != 0 {
		t.Errorf("the job was redelivered to another worker despite in-progress acks")
	}
	hs := histories(t, e.readStudy(ctx, "long"))
	if len(hs) != 1 || len(hs[attemptKey{job.Run, 1}]) == 0 {
		t.Errorf("attempts %v, want attempt 1 only", keys(hs))
	}
}

func TestConsumerLeavesDeliveriesToRecordExhaustion(t *testing.T) {
	c := worker.JobsConsumer(worker.Config{Consumer: "x", AckWait: time.Minute, MaxAttempts: 4})
	if c.Name != "x" || c.AckWait != time.Minute || c.MaxDeliver <= 4 {
		t.Errorf("JobsConsumer() = %+v, want name x, ack wait 1m and more than 4 deliveries", c)
	}
}

// takeJob fetches job from the workers' consumer (created with ackWait) as a worker that will
// never acknowledge it: the job comes back after ackWait.
func takeJob(t *testing.T, e *env, ctx context.Context, ackWait time.Duration, job study.Job) study.Job {
	t.Helper()
	cons, err := e.bus.EnsureJobsConsumer(ctx, worker.JobsConsumer(worker.Config{AckWait: ackWait}))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := study.DecodeJob(msg.Data())
	if err != nil || got.Run != job.Run {
		t.Fatalf("fetched job %+v, %v", got, err)
	}
	return got
}

// TestRedeliveredRecordedRunIsNotRerun: a worker stored every event of its run, then crashed
// before acknowledging the job. The redelivered job is acknowledged without re-running, so the
// run is recorded once.
func TestRedeliveredRecordedRunIsNotRerun(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "lostack")
	const ackWait = time.Second
	got := takeJob(t, e, ctx, ackWait, job)
	// The doomed worker's whole run, every event acknowledged by JetStream, and no job ack.
	spec, _ := worker.RunSpec(&got)
	model, _ := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	pub, _ := e.bus.NewPublisher()
	seq := &harness.Sequencer{Study: got.Study, Run: got.Run, Attempt: 1,
		Source: events.Source{Kind: events.SourceHarness, ID: "doomed"}, Publish: pub.PublishEvent}
	if _, err := harness.Run(ctx, spec, model, seq); err != nil {
		t.Fatal(err)
	}
	if err := pub.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	w := e.startWorker(worker.Config{ID: "next", AckWait: ackWait})
	waitFor(t, ctx, "the redelivered job to be settled", func() bool { return w.Stats().AlreadyRecorded.Load() == 1 })
	if w.Stats().Acked.Load() != 0 {
		t.Errorf("the worker re-ran a recorded run")
	}
	hs := histories(t, e.readStudy(ctx, "lostack"))
	if len(hs) != 1 {
		t.Errorf("attempts %v, want attempt 1 only", keys(hs))
	}
	jobsGone(t, ctx, e)
}

// TestRedeliveryWaitsForALiveAttempt: the broker redelivers a job whose attempt is still
// writing events (as after a consumer leader change that lost in-progress acks). The worker
// that gets it waits for that attempt instead of running a second one, and acknowledges the
// job once the attempt is recorded: the run is recorded once.
func TestRedeliveryWaitsForALiveAttempt(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "alive")
	const ackWait = 2 * time.Second
	// The first worker's attempt, computed at once and then published slowly, as a run whose
	// steps take a while: it is still writing when the job is redelivered after ackWait. It is
	// computed before the job is taken, whose ack wait then runs only while the events are
	// published: computed after, on a loaded machine it could leave the redelivered job
	// nothing stored to wait for.
	spec, _ := worker.RunSpec(&job)
	model, _ := llm.NewOpenAI(llm.Config{BaseURL: e.simURL})
	var evs []*events.Envelope
	seq := &harness.Sequencer{Study: job.Study, Run: job.Run, Attempt: 1,
		Source:  events.Source{Kind: events.SourceHarness, ID: "slow"},
		Publish: func(_ context.Context, e *events.Envelope) error { evs = append(evs, e); return nil }}
	if _, err := harness.Run(ctx, spec, model, seq); err != nil {
		t.Fatal(err)
	}
	pub, _ := e.bus.NewPublisher()
	step := (2*ackWait + ackWait/2) / time.Duration(len(evs))
	takeJob(t, e, ctx, ackWait, job)
	w := e.startWorker(worker.Config{ID: "next", AckWait: ackWait})
	for _, ev := range evs {
		if err := pub.PublishEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := pub.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(step)
	}
	waitFor(t, ctx, "the redelivered job to be settled", func() bool { return w.Stats().AlreadyRecorded.Load() == 1 })
	if w.Stats().Acked.Load() != 0 {
		t.Errorf("the worker ran a second attempt beside a live one")
	}
	hs := histories(t, e.readStudy(ctx, "alive"))
	if len(hs) != 1 {
		t.Errorf("attempts %v, want attempt 1 only", keys(hs))
	}
}

type panicky struct{}

func (panicky) Chat(context.Context, llm.Request) (llm.Response, error) { panic("model bug") }

// TestPanickingRunDoesNotKillTheWorker: a run that panics is closed as aborted and retried;
// when its attempts are spent it is recorded as errored, and the worker keeps working.
func TestPanickingRunDoesNotKillTheWorker(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	job := oneJob(t, e, ctx, "panics")
	w := e.startWorker(worker.Config{ID: "w", MaxAttempts: 1, NakDelay: 10 * time.Millisecond,
		Models: func(study.JobEndpoint, string) (llm.Model, error) { return panicky{}, nil }})
	waitFor(t, ctx, "the job to be exhausted", func() bool { return w.Stats().Exhausted.Load() == 1 })
	hs := histories(t, e.readStudy(ctx, "panics"))
	a1, err1 := events.Fold(hs[attemptKey{job.Run, 1}])
	a2, err2 := events.Fold(hs[attemptKey{job.Run, 2}])
	if err1 != nil || err2 != nil {
		t.Fatalf("fold: %v, %v", err1, err2)
	}
	if !a1.Done() || a1.Finished.Status != events.StatusAborted || !strings.Contains(a1.Finished.Error, "panicked") {
		t.Errorf("attempt 1 = %+v, want aborted by the panic", a1.Finished)
	}
	if !a2.Done() || a2.Finished.Status != events.StatusErrored || !strings.Contains(a2.Finished.Cause.Detail, "panicked") {
		t.Errorf("attempt 2 = %+v, want errored, the panic as its cause", a2.Finished)
	}
	select {
	case <-w.done:
		t.Fatalf("the worker stopped: %v", w.err)
	default:
	}
}

// jobsGone waits for the jobs stream to be empty. The worker terminates a job (TermWithReason)
// without waiting for the server's answer and counts it at once, so the stream, read on
// another connection, can still hold the job for a moment after the count a test waited for.
// (An ack is confirmed first, DoubleAck; the wait costs nothing when the job is gone.)
func jobsGone(t *testing.T, ctx context.Context, e *env) {
	t.Helper()
	waitFor(t, ctx, "the jobs stream to be empty", func() bool { return e.streamCount(ctx, events.JobsStream, "") == 0 })
}
