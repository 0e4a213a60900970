package bus

import (
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// EventsStreamConfig is DITTO_EVENTS: the append-only source of truth. Limits retention with
// no limits (nothing expires), file storage, a duplicate window on Nats-Msg-Id, and neither
// delete nor purge allowed, so that the analyzer can always rebuild from the first message.
// Fast batch publishing is allowed (BatchPublisher): it changes how publishes are acknowledged,
// not what is stored or how (each message de-duplicated and stored as any other).
func EventsStreamConfig(replicas int, dupWindow time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        events.EventsStream,
		Description: "ditto: every run event (append-only; the source of truth)",
		Subjects:    []string{events.EventsSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  dupWindow,
		MaxMsgSize:  events.MaxEventSize,
		DenyDelete:  true,
		DenyPurge:   true,
		Discard:     jetstream.DiscardOld,
		MaxAge:      0,

		AllowBatchPublish: true,
		MaxBytes:          -1,
		MaxMsgs:           -1,
	}
}

// JobsStreamConfig is DITTO_JOBS: a work queue of run jobs. Each message is removed once a
// worker acknowledges it; the duplicate window makes a re-submitted study publish no new jobs.
func JobsStreamConfig(replicas int, dupWindow time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        events.JobsStream,
		Description: "ditto: run jobs (work queue)",
		Subjects:    []string{events.JobsSubject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  dupWindow,
		Discard:     jetstream.DiscardOld,
		MaxBytes:    -1,
		MaxMsgs:     -1,
	}
}

// RejectedJobsStreamConfig is DITTO_REJECTED_JOBS: the jobs a worker could not run, kept raw
// with the reason in a header, so that a malformed job is never silently dropped. Limits
// retention with no limits; the duplicate window keeps one copy of a job however often it
// was delivered.
func RejectedJobsStreamConfig(replicas int, dupWindow time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        events.RejectedJobsStream,
		Description: "ditto: jobs a worker could not run (raw job, reason in the Ditto-Reject-Reason header)",
		Subjects:    []string{events.RejectedJobsSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  dupWindow,
		MaxBytes:    -1,
		MaxMsgs:     -1,
	}
}

// SpansMaxAge is how long DITTO_SPANS keeps a span record. A trace is assembled within seconds
// of its root (or after the idle timeout, minutes); the raw records stay for inspection and
// re-assembly for three days and then expire, so the stream does not grow without bound.
const SpansMaxAge = 72 * time.Hour

// SpansStreamConfig is DITTO_SPANS: the raw spans and GenAI log records producer serve
// accepted, each stored before its export is answered, and the markers of the traces' assembly.
// Limits retention with SpansMaxAge, file storage, a duplicate window on Nats-Msg-Id (derived
// from the trace and span ids, so that a re-export stores nothing new) and direct gets (the
// assembler reads a trace's markers by subject from any replica).
func SpansStreamConfig(replicas int, dupWindow time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        events.SpansStream,
		Description: "ditto: raw OpenTelemetry spans and GenAI log records, assembled into runs on DITTO_EVENTS",
		Subjects:    []string{events.SpansSubject},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  dupWindow,
		MaxMsgSize:  events.MaxEventSize,
		MaxAge:      SpansMaxAge,
		Discard:     jetstream.DiscardOld,
		MaxBytes:    -1,
		MaxMsgs:     -1,
		AllowDirect: true,
	}
}
