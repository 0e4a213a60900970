package bus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEnsureJobsConsumer(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	for _, ackWait := range []time.Duration{time.Minute, 2 * time.Minute} { // the second updates it
		c, err := b.EnsureJobsConsumer(ctx, bus.JobsConsumer{AckWait: ackWait, MaxDeliver: 34})
		if err != nil {
			t.Fatal(err)
		}
		got := c.CachedInfo().Config
		if got.Durable != events.WorkersConsumer || got.AckPolicy != jetstream.AckExplicitPolicy ||
			got.FilterSubject != events.JobsSubject || got.AckWait != ackWait || got.MaxDeliver != 34 {
			t.Errorf("EnsureJobsConsumer(ack wait %v, max deliver 34) made %+v", ackWait, got)
		}
	}
}

// The ingest consumer is kept while it agrees with the reader's position and made again from
// the position when it does not, or when forced.
func TestEnsureIngestConsumer(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher()
	for i := int64(1); i <= 10; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	spec := bus.IngestConsumer{Durable: "reader", AckWait: time.Minute, MaxAckPending: 100}
	ensure := func(after uint64, force bool) jetstream.Consumer {
		t.Helper()
		c, err := b.EnsureIngestConsumer(ctx, spec, after, force)
		if err != nil {
			t.Fatalf("EnsureIngestConsumer(%d, %v) = %v", after, force, err)
		}
		return c
	}
	// next takes the consumer's next message, acknowledging it (and those before) if ack.
	next := func(c jetstream.Consumer, ack bool) uint64 {
		t.Helper()
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if ack {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
		meta, _ := m.Metadata()
		return meta.Sequence.Stream
	}
	created := func(c jetstream.Consumer) time.Time { return c.CachedInfo().Created }

	c1 := ensure(0, false)
	for want := uint64(1); want <= 4; want++ {
		if got := next(c1, true); got != want {
			t.Fatalf("a new consumer delivers %d, want %d", got, want)
		}
	}
	c := ensure(4, false)
	if !created(c).Equal(created(c1)) {
		t.Error("a consumer that agrees with the position (4 acknowledged, nothing pending) was made again")
	}
	if got := next(c, false); got != 5 {
		t.Errorf("the kept consumer delivers %d, want 5", got)
	}
	// The reader stored up to 6 (delivered by a consumer lost since): 5 is pending here.
	c2 := ensure(6, false)
	if created(c2).Equal(created(c1)) {
		t.Error("a consumer that disagrees with the position was kept")
	}
	if got := next(c2, true); got != 7 {
		t.Errorf("the consumer made from position 6 delivers %d, want 7", got)
	}
	c3 := ensure(7, true)
	if created(c3).Equal(created(c2)) {
		t.Error("force kept a consumer that agrees with the position, want it made again")
	}
	if got := next(c3, false); got != 8 {
		t.Errorf("the forced consumer delivers %d, want 8", got)
	}

	if err := b.DeleteConsumer(ctx, events.EventsStream, "reader"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteConsumer(ctx, events.EventsStream, "reader"); err != nil {
		t.Errorf("DeleteConsumer(gone) = %v, want nil", err)
	}
	s, _ := b.Stream(ctx, events.EventsStream)
	if _, err := s.ConsumerInfo(ctx, "reader"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("ConsumerInfo(deleted) = %v, want ErrConsumerNotFound", err)
	}
}

// The ingest consumer keeps its state in the broker's memory, and one left on file by an
// earlier version (at the same position) is made again.
func TestIngestConsumerStateInMemory(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	spec := bus.IngestConsumer{Durable: "reader", AckWait: time.Minute, MaxAckPending: 100}
	old := bus.IngestConsumerConfig(spec, 1)
	old.MemoryStorage = false
	prev, err := bustest.JetStream(t, b).CreateConsumer(ctx, events.EventsStream, old)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.EnsureIngestConsumer(ctx, spec, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	info := c.CachedInfo()
	if !info.Config.MemoryStorage {
		t.Error("the ingest consumer keeps its state on file, want memory")
	}
	if info.Created.Equal(prev.CachedInfo().Created) {
		t.Error("a consumer with its state on file was kept, want it made again")
	}
}
