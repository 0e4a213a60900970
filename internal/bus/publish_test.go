package bus_test

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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

// PublishMsg keeps the message's headers and de-duplicates on its Nats-Msg-Id header, and the
// ack function hears of every acknowledgement, duplicates marked.
func TestPublishMsgReportsDuplicates(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	acks := map[string][]bool{}
	p, err := b.NewPublisher(bus.WithAckFunc(func(a bus.Ack) {
		mu.Lock()
		defer mu.Unlock()
		acks[a.MsgID] = append(acks[a.MsgID], a.Duplicate)
	}))
	if err != nil {
		t.Fatal(err)
	}
	subject := events.RejectedJobSubject("study1")
	for _, id := range []string{"job-1", "job-2"} {
		m := nats.NewMsg(subject)
		m.Data = []byte("raw " + id)
		m.Header.Set("Ditto-Test", "kept")
		m.Header.Set(jetstream.MsgIDHeader, id)
		if err := p.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil { // one after the other: the second job-1 is the duplicate
			t.Fatal(err)
		}
		if err := p.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string][]bool{"job-1": {false, true}, "job-2": {false, true}}
	if !reflect.DeepEqual(acks, want) {
		t.Errorf("acks (msg id → duplicate) = %v, want %v", acks, want)
	}
	s, err := b.Stream(ctx, events.RejectedJobsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.LastMsg(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "raw job-2" || m.Header.Get("Ditto-Test") != "kept" || s.CachedInfo().State.Msgs != 2 {
		t.Errorf("stored %q with header %q, %d messages; want raw job-2, kept, 2", m.Data, m.Header.Get("Ditto-Test"), s.CachedInfo().State.Msgs)
	}
}

// Publishes whose acknowledgements are lost when the connection breaks (stored, but the
// acknowledgement never arrived) are published again once it is back, and reported by the ack
// function as duplicates, not failures.
func TestPublishRepublishesLostAcks(t *testing.T) {
	srv := bustest.NewServer(t)
	direct := srv.Connect(t)
	proxy := bustest.NewProxy(t, srv.ClientURL())
	ctx := ctxT(t)
	b, err := bus.Open(ctx, bus.Config{URL: proxy.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var dups atomic.Int64
	p, err := b.NewPublisher(bus.WithAckFunc(func(a bus.Ack) {
		if a.Duplicate {
			dups.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Hold()
	const n = 50
	for i := int64(1); i <= n; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	for streamMsgs(t, direct) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d events stored", streamMsgs(t, direct), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	proxy.Cut()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() after the connection broke with every ack pending = %v, want nil", err)
	}
	if got := dups.Load(); got != n {
		t.Errorf("%d acknowledgements were duplicates, want all %d (stored before the break)", got, n)
	}
	if got := streamMsgs(t, direct); got != n {
		t.Errorf("stream holds %d events, want %d", got, n)
	}
}
