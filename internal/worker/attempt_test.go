package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/study"
)

// connectWorker opens a bus on srv (closed when the test ends), creates the streams and returns
// it with a quiet worker on it.
func connectWorker(t *testing.T, ctx context.Context, srv *bustest.Server) (*bus.Bus, *Worker) {
	t.Helper()
	b, err := bus.Open(ctx, bus.Config{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := New(b, Config{ID: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return b, w
}

// TestWaitRepublishesUnacknowledgedEvents: events published while the server is down are not
// acknowledged; once it is back, wait publishes them again and every event is stored once.
// (run.started is stored before the server goes: a claim is a synchronous publish.)
func TestWaitRepublishesUnacknowledgedEvents(t *testing.T) {
	port, dir := bustest.FreePort(t), t.TempDir()
	srv := bustest.StartOnPort(t, port, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, w := connectWorker(t, ctx, srv)
	job := study.Job{Study: "flaky", Run: "r1", Task: "credit_ecl", Model: "sim-steady", Condition: "baseline",
		Components: []string{}, Endpoint: study.JobEndpoint{Name: "sim", Sim: true}}
	a, err := w.newAttempt(&job, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.pub, err = b.NewPublisher(bus.WithAckTimeout(300 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := a.Emit(ctx, startedOf(&job)); err != nil {
		t.Fatal(err)
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	if err := a.Emit(ctx, events.RunFinished{Status: events.StatusAborted, Error: "test"}); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan *bustest.Server, 1)
	time.AfterFunc(400*time.Millisecond, func() { restarted <- bustest.StartOnPort(t, port, dir) })
	defer func() { (<-restarted).Stop() }()

	if err := a.wait(2 * time.Second); err != nil {
		t.Fatalf("wait across a server restart = %v, want every event acknowledged", err)
	}
	st, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.republished == 0 {
		t.Errorf("nothing was republished: the test did not exercise the failure")
	}
	if info.State.Msgs != 2 {
		t.Errorf("stream holds %d events, want 2", info.State.Msgs)
	}
}

// TestRecordedSaysWhenItCannotTell: with the broker gone, history returns an error, not
// "not recorded" (on which the job would be re-run and a recorded run doubled); with it back,
// a run with no events is "not recorded" without an error.
func TestRecordedSaysWhenItCannotTell(t *testing.T) {
	srv := bustest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, w := connectWorker(t, ctx, srv)
	if h, err := w.history(ctx, "s1", "r1"); h.recorded != 0 || h.newest != 0 || err != nil {
		t.Errorf("history(no events) = %+v, %v; want nothing recorded, no error", h, err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if h, err := w.history(short, "s1", "r1"); h.recorded != 0 || err == nil {
		t.Errorf("history(broker gone) = %+v, %v; want an error", h, err)
	}
}

// TestFinishWaitsOutAnOutage: the fenced run.finished reads the run and publishes on
// condition; with the server away for a second it tries again (each try bounded: a request
// written as the connection breaks gets no reply) instead of failing the attempt, and the
// outcome is stored once the server is back. Without it the read hung to the ack timeout and
// the outcome was lost (3 of 4 runs here); in a cluster the reads fail at once with 503 while
// a leader is elected, which the crash suite met: the attempt's outcome was lost, and its run
// was recorded as failed after its deliveries were spent on a history that could not be read.
func TestFinishWaitsOutAnOutage(t *testing.T) {
	port, dir := bustest.FreePort(t), t.TempDir()
	srv := bustest.StartOnPort(t, port, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, w := connectWorker(t, ctx, srv)
	job := study.Job{Study: "outage", Run: "r1", Task: "credit_ecl", Model: "sim-steady", Condition: "baseline",
		Components: []string{}, Endpoint: study.JobEndpoint{Name: "sim", Sim: true}}
	a, err := w.newAttempt(&job, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Emit(ctx, startedOf(&job)); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	restarted := make(chan *bustest.Server, 1)
	time.AfterFunc(time.Second, func() { restarted <- bustest.StartOnPort(t, port, dir) })
	defer func() { (<-restarted).Stop() }()
	if err := a.Emit(ctx, events.RunFinished{Status: events.StatusFailed, Error: "test"}); err != nil {
		t.Fatalf("run.finished across an outage = %v, want it stored", err)
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(ctx, ""); err != nil || n != 2 {
		t.Errorf("stream holds %d events (%v), want run.started and run.finished", n, err)
	}
}
