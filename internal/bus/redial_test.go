package bus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestConnectionClosedByServerIsReestablished: a publish on a subject longer than the server's
// control line (4 KiB) makes the server close the connection, and nats.go does not reconnect
// a connection closed that way. Every later publish of the process failed until a restart; the
// bus dials a new connection, and publishers made before, consumers ensured again and stream
// handles work on it.
func TestConnectionClosedByServerIsReestablished(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, err := b.NewPublisher(bus.WithAckTimeout(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	first := b.Conn()
	huge := "ditto.events.s.r." + strings.Repeat("x", 5000)
	if err := p.Publish(ctx, huge, "huge", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := bus.IsAckError(p.Wait(ctx)); !ok {
		t.Fatalf("Wait() after a publish the server refuses = nil, want the publish reported as failed")
	}
	for deadline := time.Now().Add(15 * time.Second); !first.IsClosed() || !b.Connected(); {
		if time.Now().After(deadline) {
			t.Fatalf("first connection closed %v, bus connected %v, redials %d: the bus did not dial again",
				first.IsClosed(), b.Connected(), b.Redials())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b.Redials() != 1 || b.Closed() {
		t.Errorf("Redials() = %d, Closed() = %v; want 1 and false", b.Redials(), b.Closed())
	}

	// The publisher made on the closed connection publishes on the new one.
	for i := int64(1); i <= 3; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() on the new connection = %v", err)
	}
	if n := streamMsgs(t, b); n != 3 {
		t.Errorf("stream holds %d messages, want 3", n)
	}
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Stream: events.EventsStream, Durable: "after-redial"}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range batch.Messages() {
		got++
	}
	if got != 3 {
		t.Errorf("consumer ensured after the redial fetched %d messages, want 3", got)
	}

	// Closing the bus is final: no redial.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !b.Closed() || b.Conn().IsConnected() || b.Redials() != 1 {
		t.Errorf("after Close: Closed() = %v, connected %v, redials %d", b.Closed(), b.Conn().IsConnected(), b.Redials())
	}
}
