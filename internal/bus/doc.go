// Package bus owns ditto's connection to NATS JetStream: connecting to a server (or hosting an
// embedded one), creating the DITTO_JOBS and DITTO_EVENTS streams, and publishing events
// asynchronously with a bounded number in flight and a step that waits for every
// acknowledgement. Connection, server, stream definitions and publishing live only here. The
// consumers (the worker's job consumer, the analyzer's ingestion, study progress and the stream
// summary) use nats.go's jetstream consumer API on (*Bus).JetStream() directly: their ack, nak
// and term decisions are the point of those packages, and a wrapper would only rename them.
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
