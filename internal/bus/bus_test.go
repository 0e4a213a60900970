package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

func testEvent(t testing.TB, run string, seq int64) *events.Envelope {
	t.Helper()
	e := events.New("study1", run, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), events.ToolCalled{
		CallID: fmt.Sprintf("c%d", seq), Tool: "load", Args: events.MustCanonical(map[string]any{"path": "data/a", "n": seq}),
	})
	e.Seq = seq
	e.Source = events.Source{Kind: events.SourceHarness, ID: "test"}
	return &e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func streamMsgs(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	s, err := b.Stream(ctxT(t), events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Count(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPublishedEventArrivesIntact(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx := ctxT(t)
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	want := testEvent(t, "run-1", 1)
	if err := p.PublishEvent(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() = %v", err)
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.Msg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "ditto.events.study1.run-1.tool.called" || msg.Header.Get(jetstream.MsgIDHeader) != want.ID {
		t.Errorf("stored subject %q msg id %q", msg.Subject, msg.Header.Get(jetstream.MsgIDHeader))
	}
	got, err := events.Decode(msg.Data)
	if err != nil {
		t.Fatalf("Decode(stored) = %v", err)
	}
	wantBytes, _ := events.Encode(want)
	gotBytes, _ := events.Encode(&got)
	if string(gotBytes) != string(wantBytes) {
		t.Errorf("stored event = %s, want %s", gotBytes, wantBytes)
	}
}

func TestPublishTwiceStoresOnce(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher()
	e := testEvent(t, "run-1", 1)
	for i := 0; i < 3; i++ {
		if err := p.PublishEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMsgs(t, b); n != 1 {
		t.Errorf("stream holds %d messages after 3 publishes of one event, want 1", n)
	}
}

func TestStreamSurvivesRestart(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher(bus.WithMaxInFlight(8))
	const n = 500
	for i := 1; i <= n; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	srv2 := srv.Restart()
	b2 := srv2.Connect(t)
	if got := streamMsgs(t, b2); got != n {
		t.Errorf("after restart the stream holds %d events, want %d", got, n)
	}
}

func TestWaitReportsFailureWhenServerGone(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher(bus.WithAckTimeout(500 * time.Millisecond))
	srv.Stop()
	for i := 1; i <= 3; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	err := p.Wait(ctx)
	failed, ok := bus.IsAckError(err)
	if !ok || !errors.Is(err, bus.ErrNotAcked) || len(failed) != 3 {
		t.Fatalf("Wait() with the server gone = %v, want an AckError listing 3 publishes", err)
	}
	if failed[0].MsgID == "" || failed[0].Subject == "" {
		t.Errorf("failure %+v lacks subject or msg id", failed[0])
	}
}

func TestPublishInvalidEventRefused(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	p, _ := b.NewPublisher()
	e := testEvent(t, "bad.run", 1)
	if err := p.PublishEvent(ctxT(t), e); !errors.Is(err, events.ErrUnsafeToken) {
		t.Errorf("PublishEvent(unsafe run) = %v, want ErrUnsafeToken", err)
	}
}

func TestEmbeddedSharedByTwoProcesses(t *testing.T) {
	// Two Opens on one data dir stand for two processes: the first hosts, the second joins.
	dir := t.TempDir()
	ctx := ctxT(t)
	cfg := bus.Config{DataDir: dir, EmbeddedPort: -1}
	host, err := bus.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if err := host.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	guest, err := bus.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer guest.Close()
	if !host.Hosting() || guest.Hosting() {
		t.Fatalf("Hosting() = %v, %v; want the first to host and the second to join", host.Hosting(), guest.Hosting())
	}
	p, _ := guest.NewPublisher()
	if err := p.PublishEvent(ctx, testEvent(t, "r", 1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, host); n != 1 {
		t.Errorf("host sees %d events published by the guest, want 1", n)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		give bus.Config
	}{
		{"bad url", bus.Config{URL: "::nope"}},
		{"cert without key", bus.Config{TLSCert: "a.pem"}},
		{"missing creds file", bus.Config{CredsFile: "/nonexistent/x.creds"}},
		{"token and user", bus.Config{Token: "t", User: "u"}},
		{"replicas", bus.Config{Replicas: 9}},
		{"negative duplicate window", bus.Config{DuplicateWindow: -time.Minute}},
		{"tiny duplicate window", bus.Config{DuplicateWindow: time.Millisecond}},
	}
	for _, tt := range tests {
		if err := tt.give.Validate(); !errors.Is(err, bus.ErrConfig) {
			t.Errorf("%s: Validate() = %v, want ErrConfig", tt.name, err)
		}
	}
}

// Every stream, DITTO_REJECTED_JOBS included, gets the configured duplicate window, and a
// second EnsureStreams with another window updates them.
func TestDuplicateWindow(t *testing.T) {
	srv := bustest.NewServer(t)
	ctx := ctxT(t)
	for _, win := range []time.Duration{30 * time.Second, 5 * time.Minute} {
		b, err := bus.Open(ctx, bus.Config{URL: srv.ClientURL(), DuplicateWindow: win})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.EnsureStreams(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{events.EventsStream, events.JobsStream, events.RejectedJobsStream} {
			s, err := b.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.CachedInfo().Config.Duplicates; got != win {
				t.Errorf("%s duplicate window = %v, want %v", name, got, win)
			}
		}
		b.Close()
	}
}
