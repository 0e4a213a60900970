// Package bus owns ditto's connection to NATS JetStream: connecting to a server (or hosting an
// embedded one), defining and creating the streams (DITTO_EVENTS, DITTO_JOBS,
// DITTO_REJECTED_JOBS, DITTO_SPANS) and the consumers (the workers' shared consumer on DITTO_JOBS, the
// analyzer's durable consumer on DITTO_EVENTS, the assembler's two on DITTO_SPANS, ordered reads), and publishing with a bounded
// number in flight and a step that waits for every acknowledgement. No other package makes a
// JetStream context, creates a stream or consumer, or publishes to JetStream; a test in this
// package fails if one does. The names of the streams, subjects and durable consumers are
// spelled once, in package events.
//
// What the bus gives other packages:
//
//   - EnsureStreams (every process, at start) and the stream configs.
//   - Publisher: every publish to JetStream, events or not (PublishEvent, Publish, PublishMsg),
//     with Wait reporting each publish that failed and WithAckFunc each that was a duplicate;
//     and PublishIfLast, the one synchronous publish, stored only if the stream's last message
//     on a filter is the one the caller expects (a compare-and-set).
//   - EnsureJobsConsumer, EnsureIngestConsumer and EnsureAssemblyConsumer return a jetstream.Consumer to fetch from:
//     the ack, nak and term decisions on its messages are the point of the packages that
//     consume (worker, warehouse) and stay there. DeleteConsumer removes a durable one.
//   - Stream: a read-only handle on a stream (state, subject counts, stored messages, a
//     consumer's position, and Read, an ordered read of the messages on a subject filter).
//
// # Sharing one embedded server between processes
//
// With no URL, Open looks for a server already hosted for the same data directory: the
// hosting process writes its client URL to <data dir>/nats.url. If that URL answers, Open
// connects to it; otherwise Open starts an embedded nats-server with JetStream (file store
// under <data dir>/jetstream) on loopback and writes the file. So the producer, a worker and the
// analyzer started as separate processes with the same --data-dir share one server and one
// store: the first to start hosts it, the others connect. The host must outlive the others;
// when it stops, the others reconnect to the next process that hosts it.
package bus
