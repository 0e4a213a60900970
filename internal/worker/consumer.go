package worker

import (
	"cmp"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
)

// Headers of a job kept on DITTO_REJECTED_JOBS.
const (
	HeaderReason = "Ditto-Reject-Reason"
	HeaderWorker = "Ditto-Worker"
	HeaderJobSeq = "Ditto-Job-Seq"
)

// JobsConsumer describes the consumer on DITTO_JOBS shared by workers configured with cfg. Its
// MaxDeliver leaves recordDeliveries beyond MaxAttempts, so that a job whose attempts are
// exhausted is still delivered once more to be recorded as failed.
func JobsConsumer(cfg Config) bus.JobsConsumer {
	return bus.JobsConsumer{
		Name:       cmp.Or(cfg.Consumer, events.WorkersConsumer),
		AckWait:    cmp.Or(cfg.AckWait, DefaultAckWait),
		MaxDeliver: cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts) + recordDeliveries,
	}
}
