package bus

import (
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// JobsConsumer describes the durable pull consumer on DITTO_JOBS that every worker shares.
type JobsConsumer struct {
	Name string // durable name; default events.WorkersConsumer
	// AckWait is how long a delivered job may go without an acknowledgement or an in-progress
	// ack before the broker delivers it again.
	AckWait time.Duration
	// MaxDeliver is how many times a job is delivered before the broker gives up on it.
	MaxDeliver int
}

// JobsConsumerConfig is the consumer c describes: explicit acks (a job is removed from the work
// queue only once a worker acknowledges it), every job from the start of the stream.
func JobsConsumerConfig(c JobsConsumer) jetstream.ConsumerConfig {
	if c.Name == "" {
		c.Name = events.WorkersConsumer
	}
	return jetstream.ConsumerConfig{
		Durable:       c.Name,
		Description:   "ditto harness workers (shared)",
		FilterSubject: events.JobsSubject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    c.MaxDeliver,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 100_000,
	}
}

// IngestConsumer describes the analyzer's durable consumer: the whole stream delivered in order
// to one reader that acknowledges cumulatively, whose position is kept by the reader (in its
// database), not by the consumer.
type IngestConsumer struct {
	Stream  string // default events.EventsStream
	Durable string // default events.AnalyzerConsumer; one per reader
	// AckWait is how long the broker waits for an acknowledgement before delivering again.
	AckWait time.Duration
	// MaxAckPending bounds the messages delivered and not yet acknowledged.
	MaxAckPending int
}

func (c IngestConsumer) withDefaults() IngestConsumer {
	if c.Stream == "" {
		c.Stream = events.EventsStream
	}
	if c.Durable == "" {
		c.Durable = events.AnalyzerConsumer
	}
	return c
}

// IngestConsumerConfig is the consumer c describes, delivering from stream sequence start
// (from the first message when start <= 1).
func IngestConsumerConfig(c IngestConsumer, start uint64) jetstream.ConsumerConfig {
	c = c.withDefaults()
	cfg := jetstream.ConsumerConfig{
		Durable:     c.Durable,
		Description: "ditto analyzer: DITTO_EVENTS into DuckDB (position kept in the database)",
		// AckAll: the reader acknowledges a whole committed batch with one ack of its last
		// message. Only one reader consumes a durable, so cumulative acks lose nothing.
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    -1, // poison messages are terminated explicitly, never retried forever
		MaxAckPending: c.MaxAckPending,
		FilterSubject: events.EventsSubject,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
		// The consumer's state (delivered, acknowledged, pending) in the broker's memory: the
		// reader keeps its position itself and makes the consumer again from it whenever the
		// consumer does not agree with it, or is gone (a broker restarted). On file, the
		// broker wrote that state to disk again and again, encoding every pending message
		// each time (its consumer store's flush loop, up to MaxAckPending of them): about a
		// tenth of its CPU while delivering to the analyzer in BenchmarkIngest, for a
		// position nobody reads.
		MemoryStorage: true,
	}
	if start <= 1 {
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	} else {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = start
	}
	return cfg
}

// AssemblyConsumer describes one of the two durable consumers on DITTO_SPANS that every
// producer serve shares: the root spans (events.AssemblerConsumer) or the first-seen markers
// (events.AssemblerIdleConsumer). Messages are acknowledged one by one once their trace's run
// is in DITTO_EVENTS; a message not acknowledged within AckWait is delivered again, to any
// replica, which is what makes an assembly interrupted by a crash happen again.
type AssemblyConsumer struct {
	Durable string // events.AssemblerConsumer or events.AssemblerIdleConsumer
	// AckWait is how long a delivered record may go unacknowledged before it is delivered again.
	AckWait time.Duration
	// MaxAckPending bounds the records delivered and not yet acknowledged: for the idle
	// consumer, the traces waiting for their root (each holds its marker until then).
	MaxAckPending int
}

// AssemblyConsumerConfig is the consumer c describes: explicit acks, every record from the start
// of the stream, filtered on the record kind the durable name implies.
func AssemblyConsumerConfig(c AssemblyConsumer) (jetstream.ConsumerConfig, error) {
	var filter, desc string
	switch c.Durable {
	case events.AssemblerConsumer:
		filter, desc = events.SpanRecordsSubject(events.RecordRoot), "ditto assembler: root spans (shared by every producer serve)"
	case events.AssemblerIdleConsumer:
		filter, desc = events.SpanRecordsSubject(events.RecordSeen), "ditto assembler: first-seen markers, for traces whose root never comes (shared)"
	default:
		return jetstream.ConsumerConfig{}, fmt.Errorf("%w: assembly consumer %q is neither %s nor %s", ErrConfig, c.Durable, events.AssemblerConsumer, events.AssemblerIdleConsumer)
	}
	return jetstream.ConsumerConfig{
		Durable:       c.Durable,
		Description:   desc,
		FilterSubject: filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    -1, // a trace is retried until its run is stored; poison traces are acknowledged and counted
		MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, nil
}
