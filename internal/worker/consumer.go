package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Rejected jobs are kept on their own stream, outside ditto.jobs.> (which the work queue's
// consumer would deliver again) and outside ditto.events.> (they are not events).
const (
	RejectedStream  = "DITTO_REJECTED_JOBS"
	RejectedPrefix  = "ditto.rejected.jobs"
	RejectedSubject = RejectedPrefix + ".>"
	// Headers of a rejected job.
	HeaderReason = "Ditto-Reject-Reason"
	HeaderWorker = "Ditto-Worker"
	HeaderJobSeq = "Ditto-Job-Seq"
)

// ConsumerConfig is the durable pull consumer on DITTO_JOBS shared by all workers.
func ConsumerConfig(name string, ackWait time.Duration, maxAttempts int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "ditto harness workers (shared)",
		FilterSubject: events.JobsSubject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    maxAttempts + recordDeliveries,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 100_000,
	}
}

// RejectedStreamConfig keeps rejected jobs: raw bytes, with the reason in a header.
func RejectedStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        RejectedStream,
		Description: "ditto: jobs a worker could not run (raw job, reason in the Ditto-Reject-Reason header)",
		Subjects:    []string{RejectedSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  10 * time.Minute,
		MaxBytes:    -1,
		MaxMsgs:     -1,
	}
}

// ensure creates or updates the consumer and the rejected-jobs stream.
func ensure(ctx context.Context, js jetstream.JetStream, cfg Config, replicas int) (jetstream.Consumer, error) {
	if _, err := js.CreateOrUpdateStream(ctx, RejectedStreamConfig(max(replicas, 1))); err != nil {
		return nil, fmt.Errorf("worker: ensure stream %s: %w", RejectedStream, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, events.JobsStream, ConsumerConfig(cfg.Consumer, cfg.AckWait, cfg.MaxAttempts))
	if err != nil {
		return nil, fmt.Errorf("worker: ensure consumer %s on %s: %w", cfg.Consumer, events.JobsStream, err)
	}
	return cons, nil
}
