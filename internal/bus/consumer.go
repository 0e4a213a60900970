package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// The consumers are created here; what is done with their messages (ack, nak, term) is decided
// by the packages that fetch from them.

// EnsureJobsConsumer creates the workers' shared consumer on DITTO_JOBS, or updates it to c,
// and returns it for fetching jobs.
func (b *Bus) EnsureJobsConsumer(ctx context.Context, c JobsConsumer) (jetstream.Consumer, error) {
	cfg := JobsConsumerConfig(c)
	cons, err := b.jetStream().CreateOrUpdateConsumer(ctx, events.JobsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: ensure consumer %s on %s: %w", cfg.Durable, events.JobsStream, err)
	}
	return cons, nil
}

// EnsureIngestConsumer returns the durable consumer c describes, delivering from stream
// sequence after+1, where after is the last sequence the reader has durably stored. The reader
// is the authority on position: an existing consumer is kept only if it agrees with after (its
// ack floor and its last delivery are after, nothing awaits acknowledgement, its settings are
// c's); otherwise it is deleted and created again from after+1. This is what makes a restart
// after a crash between fetch and commit, or between commit and ack, exact and quick. With
// force (a stall watchdog), an existing consumer is deleted whatever it says: a consumer that
// stopped delivering can look exactly like one that agrees with after.
func (b *Bus) EnsureIngestConsumer(ctx context.Context, c IngestConsumer, after uint64, force bool) (jetstream.Consumer, error) {
	c = c.withDefaults()
	want := IngestConsumerConfig(c, after+1)
	cons, err := b.jetStream().Consumer(ctx, c.Stream, c.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("bus: consumer %s: %w", c.Durable, err)
	default:
		info := cons.CachedInfo()
		if !force && info.AckFloor.Stream == after && info.NumAckPending == 0 && info.Delivered.Stream == after &&
			info.Config.AckPolicy == want.AckPolicy && info.Config.MaxAckPending == want.MaxAckPending &&
			info.Config.AckWait == want.AckWait && info.Config.FilterSubject == want.FilterSubject &&
			info.Config.MemoryStorage == want.MemoryStorage {
			return cons, nil
		}
		if err := b.DeleteConsumer(ctx, c.Stream, c.Durable); err != nil {
			return nil, fmt.Errorf("bus: reset consumer %s: %w", c.Durable, err)
		}
	}
	cons, err = b.jetStream().CreateConsumer(ctx, c.Stream, want)
	if err != nil {
		return nil, fmt.Errorf("bus: create consumer %s: %w", c.Durable, err)
	}
	return cons, nil
}

// EnsureAssemblyConsumer creates the assembler's consumer c describes, or updates it to c, and
// returns it for fetching span records.
func (b *Bus) EnsureAssemblyConsumer(ctx context.Context, c AssemblyConsumer) (jetstream.Consumer, error) {
	cfg, err := AssemblyConsumerConfig(c)
	if err != nil {
		return nil, err
	}
	cons, err := b.js.CreateOrUpdateConsumer(ctx, events.SpansStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: ensure consumer %s on %s: %w", cfg.Durable, events.SpansStream, err)
	}
	return cons, nil
}

// DeleteConsumer deletes a durable consumer of stream; one that does not exist is no error.
func (b *Bus) DeleteConsumer(ctx context.Context, stream, durable string) error {
	if err := b.jetStream().DeleteConsumer(ctx, stream, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("bus: delete consumer %s on %s: %w", durable, stream, err)
	}
	return nil
}
