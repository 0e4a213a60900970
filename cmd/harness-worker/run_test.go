package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"bad concurrency", []string{"--concurrency", "-1"}, worker.ErrConfig},
		{"bad latency scale", []string{"--sim-latency-scale", "-1"}, cli.ErrUsage},
		{"bad metrics addr", []string{"--metrics-addr", "nope"}, cli.ErrUsage},
		{"bad log level", []string{"--log-level", "loud"}, cli.ErrUsage},
		{"stray argument", []string{"extra"}, cli.ErrUsage},
		{"unknown flag", []string{"--turbo"}, cli.ErrUsage},
	}
	for _, tt := range tests {
		err := runWorker(context.Background(), flag.NewFlagSet("run", flag.ContinueOnError), tt.args)
		if !errors.Is(err, tt.want) || !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%s: run %q = %v, want %v and a usage error", tt.name, tt.args, err, tt.want)
		}
	}
	if err := runSimServe(context.Background(), flag.NewFlagSet("sim-serve", flag.ContinueOnError), []string{"--latency-scale", "-2"}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("sim-serve --latency-scale -2 = %v, want ErrUsage", err)
	}
}

// TestRunCompletesAStudy runs `harness-worker run` (hosting the simulated models) against a
// nats-server until a small study is done, then stops it as SIGTERM would.
func TestRunCompletesAStudy(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := &study.Spec{Name: "cmdrun", Tasks: []string{"credit_ecl"}, Models: []string{"sim-steady", "sim-wobbly"},
		Conditions: []string{"baseline", "harness_sp"}, Runs: 3, Endpoints: map[string]study.Endpoint{"sim": {Sim: true}}}
	s.Normalize()
	p, err := study.Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := study.Submit(ctx, b, p, "test"); err != nil {
		t.Fatal(err)
	}
	cfg := runConfig{
		Bus:             bus.Config{URL: srv.ClientURL()},
		Worker:          worker.Config{ID: "cmd", Concurrency: 2, FetchWait: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Sim:             true,
		SimLatencyScale: 0,
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(rctx, cfg) }()
	for {
		pr, err := study.GetProgress(ctx, b, p)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Done() {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("study not done: %+v", pr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after SIGTERM = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("run did not stop")
	}
}

// TestRunKeepsClusterStreamsR3: `harness-worker run --replicas 1` against a cluster whose
// streams are R3 (the default replicas, a forgotten DITTO_REPLICAS=3) scales none of them
// down, DITTO_REJECTED_JOBS included.
func TestRunKeepsClusterStreamsR3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := bustest.StartCluster(t)
	b := c.Connect(t, 3)
	// Generous: on a loaded 2-core machine a 3-node cluster answers slowly (60 s was seen to
	// run out); the test polls, so a quiet machine passes in seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := runConfig{
		Bus: bus.Config{URL: c.URL(), Replicas: 1},
		// A long fetch wait keeps a pull request pending most of the time, so the poll below
		// sees it even when its consumer-info requests are slow.
		Worker: worker.Config{ID: "r1", FetchWait: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(rctx, cfg) }()
	// The worker is running once it waits on its consumer for jobs (it ensured the streams
	// before it made the consumer).
	jobs, err := b.Stream(ctx, events.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	// Each question gets its own few seconds: under load a cluster's answer can be lost (a
	// leader change), and one request waiting on the test's whole deadline failed the test
	// once after 3 minutes with the worker running.
	waiting := func() bool {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		info, err := jobs.ConsumerInfo(qctx, events.WorkersConsumer)
		return err == nil && info.NumWaiting > 0
	}
	for {
		if waiting() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run stopped before its consumer existed: %v", err)
		case <-ctx.Done():
			t.Fatal("the worker never waited for jobs")
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("run after SIGTERM = %v, want nil", err)
	}
	for _, name := range []string{events.EventsStream, events.JobsStream, events.RejectedJobsStream} {
		s, err := b.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("%s replicas = %d after a worker started with --replicas 1, want 3", name, got)
		}
	}
}
