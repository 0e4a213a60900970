package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// batchEvents returns n encoded events of one run: subject, msg id, data.
func batchEvents(t *testing.T, n int) (subjects, ids []string, data [][]byte) {
	t.Helper()
	for i := 1; i <= n; i++ {
		e := testEvent(t, "run-1", int64(i))
		raw, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		subject, err := events.SubjectOf(e)
		if err != nil {
			t.Fatal(err)
		}
		subjects, ids, data = append(subjects, subject), append(ids, e.ID), append(data, raw)
	}
	return subjects, ids, data
}

// publishAll publishes every event through p and waits for it.
func publishAll(ctx context.Context, t *testing.T, p *bus.BatchPublisher, subjects, ids []string, data [][]byte) {
	t.Helper()
	for i := range subjects {
		if err := p.Publish(ctx, subjects[i], ids[i], data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() = %v, want nil", err)
	}
}

// checkStored fails unless DITTO_EVENTS holds exactly the given msg ids, in order.
func checkStored(ctx context.Context, t *testing.T, b *bus.Bus, ids []string) {
	t.Helper()
	s, err := bustest.JetStream(t, b).Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != uint64(len(ids)) {
		t.Fatalf("stream holds %d messages, want %d", n, len(ids))
	}
	for i, id := range ids {
		m, err := s.GetMsg(ctx, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != id {
			t.Fatalf("message %d has msg id %q, want %q", i+1, got, id)
		}
	}
}

// A BatchPublisher stores every message once, in order, with its msg id, acknowledged by fast
// batches (several full ones, with flow control stalls inside each, and a partial one that
// Wait ends); the same messages published again in batches are de-duplicated.
func TestBatchPublisherStoresEachOnce(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	subjects, ids, data := batchEvents(t, 100)
	for round := 1; round <= 2; round++ {
		// At most 8 in flight: a flow acknowledgement every 4 messages.
		p, err := b.NewBatchPublisher(ctx, events.EventsStream, 30, bus.WithMaxInFlight(8))
		if err != nil {
			t.Fatal(err)
		}
		publishAll(ctx, t, p, subjects, ids, data)
		if p.Stopped() != nil || p.Batched() != int64(len(ids)) {
			t.Errorf("round %d: Batched() = %d, Stopped() = %v; want %d, nil", round, p.Batched(), p.Stopped(), len(ids))
		}
		checkStored(ctx, t, b, ids)
	}
}

// On a stream that does not allow batch publishing, a BatchPublisher publishes every message
// on its own, each stored once.
func TestBatchPublisherWithoutBatchStream(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, err := b.NewBatchPublisher(ctx, events.RejectedJobsStream, 10)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stopped() == nil {
		t.Fatalf("Stopped() = nil on %s, which does not allow batches", events.RejectedJobsStream)
	}
	const n = 25
	subject := events.RejectedJobSubject("study1")
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("job-%d", i%20) // five duplicates
		if err := p.Publish(ctx, subject, id, []byte("raw "+id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.Stream(ctx, events.RejectedJobsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; p.Batched() != 0 || got != 20 {
		t.Errorf("Batched() = %d, stream holds %d; want 0, 20", p.Batched(), got)
	}
}

// A batch whose acknowledgements do not arrive (the connection holds them, then breaks) is
// abandoned: its messages and the later ones are published one by one, across the reconnect,
// and each is stored once.
func TestBatchPublisherAcrossBrokenConnection(t *testing.T) {
	srv := bustest.NewServer(t)
	direct := srv.Connect(t)
	proxy := bustest.NewProxy(t, srv.ClientURL())
	ctx := ctxT(t)
	b, err := bus.Open(ctx, bus.Config{URL: proxy.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A batch waits a fifth of the ack timeout (1 s) for an acknowledgement.
	p, err := b.NewBatchPublisher(ctx, events.EventsStream, 1000, bus.WithAckTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	subjects, ids, data := batchEvents(t, 50)
	proxy.Hold()
	for i := range subjects {
		if err := p.Publish(ctx, subjects[i], ids[i], data[i]); err != nil {
			t.Fatal(err)
		}
	}
	if p.Stopped() == nil {
		t.Fatal("Stopped() = nil after a batch got no acknowledgement")
	}
	for streamMsgs(t, direct) < uint64(len(ids)) {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d events stored", streamMsgs(t, direct), len(ids))
		case <-time.After(10 * time.Millisecond):
		}
	}
	proxy.Cut()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() after the connection broke = %v, want nil", err)
	}
	if p.Batched() != 0 {
		t.Errorf("Batched() = %d, want 0 (no batch was acknowledged)", p.Batched())
	}
	checkStored(ctx, t, direct, ids)
}

// When the server refuses a batch's messages (here the stream is full: max bytes, new ones
// discarded; a full disk is refused alike), Stopped says what the server said, not only that
// the batch publisher closed, and so does Wait of the messages then published one by one.
func TestBatchPublisherSaysWhyTheServerStoppedIt(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	bustest.LimitStream(ctx, t, b, events.EventsStream, 20_000)
	p, err := b.NewBatchPublisher(ctx, events.EventsStream, 50)
	if err != nil {
		t.Fatal(err)
	}
	subjects, ids, data := batchEvents(t, 200)
	for i := range subjects {
		if err := p.Publish(ctx, subjects[i], ids[i], data[i]); err != nil {
			t.Fatal(err)
		}
	}
	werr := p.Wait(ctx)
	stopped := p.Stopped()
	if stopped == nil {
		t.Fatal("Stopped() = nil, though the stream could not hold the messages")
	}
	if !strings.Contains(stopped.Error(), "maximum bytes") {
		t.Errorf("Stopped() = %v, want the server's reason (maximum bytes exceeded)", stopped)
	}
	t.Logf("Stopped() = %v; Wait() = %v", stopped, werr)
	if werr == nil || !strings.Contains(werr.Error(), "maximum bytes") {
		t.Errorf("Wait() = %v, want the messages not stored, with the server's reason", werr)
	}
}
