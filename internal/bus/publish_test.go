package bus_test

import (
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// TestPublishAcrossReconnect: publishes awaiting their acknowledgement when the server goes
// away, and publishes made while it is away, are acknowledged once it is back on the same
// address within the ack timeout; each is stored once.
func TestPublishAcrossReconnect(t *testing.T) {
	port, dir := bustest.FreePort(t), t.TempDir()
	srv := bustest.StartOnPort(t, port, dir)
	ctx := ctxT(t)
	b, err := bus.Open(ctx, bus.Config{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := b.NewPublisher(bus.WithAckTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 1; i <= n/2; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	for i := n/2 + 1; i <= n; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	bustest.StartOnPort(t, port, dir)
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() across a reconnect = %v, want every publish acknowledged", err)
	}
	if got := streamMsgs(t, b); got != n {
		t.Errorf("stream holds %d events, want %d", got, n)
	}
}

// TestPublishBeyondConnectionWindow: a Publisher allowed more publishes in flight than the
// connection's asynchronous window (4,000 by default, shared by every Publisher on the bus)
// falls back to synchronous publishes past it; with the server gone, Wait reports every one.
func TestPublishBeyondConnectionWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 4,003 events")
	}
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx := ctxT(t)
	const n = 4003
	p, err := b.NewPublisher(bus.WithMaxInFlight(n), bus.WithAckTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for i := 1; i <= n; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	failed, ok := bus.IsAckError(p.Wait(ctx))
	if !ok || len(failed) != n {
		t.Fatalf("Wait() with the server gone reported %d failures, want %d", len(failed), n)
	}
	seen := make(map[string]bool, n)
	for _, f := range failed {
		seen[f.MsgID] = true
	}
	if len(seen) != n {
		t.Errorf("Wait() reported %d distinct msg ids, want %d", len(seen), n)
	}
	if err := p.Wait(ctx); err != nil {
		t.Errorf("second Wait() = %v, want nil (failures are reported once)", err)
	}
}
