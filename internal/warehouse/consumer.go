package warehouse

import (
	"context"
	"errors"
	"fmt"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// consumerConfig is the durable consumer that delivers the stream from stream sequence start.
func consumerConfig(cfg IngestConfig, start uint64) jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		Durable:     cfg.Durable,
		Description: "ditto analyzer: DITTO_EVENTS into DuckDB (position kept in the database)",
		// AckAll: the committer acknowledges a whole committed batch with one ack of its last
		// message. Only one analyzer consumes a durable, so cumulative acks lose nothing.
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1, // poison messages are terminated explicitly, never retried forever
		MaxAckPending: cfg.MaxAckPending,
		FilterSubject: events.EventsSubject,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
	}
	if start <= 1 {
		c.DeliverPolicy = jetstream.DeliverAllPolicy
	} else {
		c.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		c.OptStartSeq = start
	}
	return c
}

// ensureConsumer returns the durable consumer positioned just after the watermark. The database
// is the authority on position: an existing consumer is kept only if it agrees with the
// watermark (its ack floor is the watermark, nothing is pending acknowledgement, its settings
// are current); otherwise it is deleted and created again from watermark+1. This is what makes
// a restart after a crash between fetch and commit, or between commit and ack, exact and quick.
// With force (the stall watchdog), an existing consumer is deleted whatever it says: a consumer
// that stopped delivering can look exactly like one that agrees with the watermark.
func ensureConsumer(ctx context.Context, s jetstream.Stream, cfg IngestConfig, watermark uint64, force bool) (jetstream.Consumer, error) {
	want := consumerConfig(cfg, watermark+1)
	c, err := s.Consumer(ctx, cfg.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("warehouse: consumer %s: %w", cfg.Durable, err)
	default:
		info := c.CachedInfo()
		if !force && info.AckFloor.Stream == watermark && info.NumAckPending == 0 && info.Delivered.Stream == watermark &&
			info.Config.AckPolicy == want.AckPolicy && info.Config.MaxAckPending == want.MaxAckPending &&
			info.Config.AckWait == want.AckWait && info.Config.FilterSubject == want.FilterSubject {
			return c, nil
		}
		if err := s.DeleteConsumer(ctx, cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("warehouse: reset consumer %s: %w", cfg.Durable, err)
		}
	}
	c, err = s.CreateConsumer(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("warehouse: create consumer %s: %w", cfg.Durable, err)
	}
	return c, nil
}
