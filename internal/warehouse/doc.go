// Package warehouse is the analyzer's storage: it ingests DITTO_EVENTS into a DuckDB database and
// maintains the projection that people and the metrics query (the SQL is in package queries).
//
// # Ingestion
//
// A durable pull consumer (AckAll policy) delivers messages; a fetching goroutine gathers them
// into batches bounded by count, bytes and time, keeping of each message its body, subject,
// reply subject and id (not the client's message), decodes them in chunks as they arrive
// (events.DecodeWithPayload, beside the gathering, on every core) and builds an Arrow record
// batch of the good ones; the committing goroutine stores the batch in a DuckDB transaction
// and only then acknowledges it, by reply subject. While batches fill before BatchWait (a
// backlog, or a rate that fills one within it) the transaction stays open for the next batches,
// up to IngestConfig.TxnBatches (a DuckDB row group), and commits them together: DuckDB's cost
// per transaction is shared, and each batch's messages and record are let go as soon as it is
// stored. Memory is bounded
// whatever the backlog: the client buffers a pull of about 3 MiB of messages (a count from the
// stream's mean message size, at most a batch), at most three batches exist at once (the one
// being gathered, one decoded waiting for the committer, and the one being stored), and the
// broker delivers at most MaxAckPending unacknowledged messages.
// The consumer keeps its state in the broker's memory: the position is the database's, so a
// consumer lost with a restarted broker is made again from it (the next session), and the
// broker writes no consumer state to disk.
//
// # Build tag
//
// Batches reach DuckDB through Arrow views when built with -tags duckdb_arrow, the path ditto
// ships (make sets it): the events' view ingest_batch and the run_folds rows' ingest_folds, each
// registered once a connection over a record reader re-armed with every batch, and scanned by
// an INSERT … SELECT prepared once (eventLoader; DuckDB keeps C memory at every registration
// and every bind, TestLoadLeavesNoCMemory). The views live in an in-memory database attached
// beside the warehouse's (ditto_feeds), never in its file. Without the tag the same record batches and rows go
// through DuckDB's appenders, slower (BenchmarkLoad) but buildable by a plain go test: the
// events through a query appender running the same INSERT over a VARCHAR payload (a table
// appender re-encodes a JSON column's values with encoding/json, which escapes '<', '>' and
// '&'), the run_folds rows through a table appender. make test runs this package in both
// builds. LoadPath says which.
//
// # Exactly once
//
// The transaction that stores a batch (or several) also advances a watermark, the stream
// sequence at and below which every message is stored (table ingest_state). A message at or
// below it is a redelivery and is acknowledged without being stored; a batch whose sequences
// skip one (a lost delivery) is stored only up to the gap, its transaction committed, and the
// consumer is restarted from the watermark. Nothing is acknowledged before the COMMIT; acking
// the transaction's last stored message acknowledges the rest (AckAll). A transaction of several
// batches that fails is rolled back and its messages, let go, are delivered again by a restarted
// consumer, stored one batch a transaction until the watermark passes them (so that a message
// DuckDB refuses is found in its batch, below). At
// start the consumer is (re)created from the watermark whenever its state disagrees with the
// database, so the database, not the broker, says where ingestion stands: an analyzer killed
// between commit and ack, or between fetch and commit, resumes exactly. Events re-sent after the
// broker's duplicate window (same id, new stream sequence) are found by an id anti-join against
// the stored ids, restricted to the batch's id range so that DuckDB reads only the row groups
// whose min/max statistics overlap it, and skipped for ids above the largest stored id. There is
// no primary key on events.id: its ART index halved the append rate (BenchmarkLoad, figures in
// load_bench_test.go) and must be held in memory as the table grows.
//
// # Stalls
//
// A durable consumer can stop delivering without any error, for instance after it lost quorum
// and changed leader: the fetch loop keeps polling and the consumer reports nothing pending. A
// watchdog beside the batches asks the stream for its last sequence every second or so; the
// reported lag (Stats.Lag, ditto_analyzer_consumer_lag) is that minus the watermark, so a stall
// shows. When nothing has been delivered for IngestConfig.StallTimeout while the stream holds
// messages beyond the watermark, it logs a warning, deletes the consumer, creates it again from
// the watermark and counts it (Stats.Resets, ditto_analyzer_consumer_resets_total).
//
// # Rejected messages
//
// A message that does not decode, fails validation or sits on a subject other than its
// envelope's is stored in rejected_events (raw bytes, subject, stream sequence, reason) in the
// same transaction and then terminated (Term): it is never redelivered and never stops
// ingestion. Nor does a message DuckDB refuses: when a batch's transaction fails, the batch is
// stored again in halves, down to single messages, and a message refused even alone (and once
// more) is kept in rejected_events as unstorable, with DuckDB's reason. Only a failure that
// refuses even that row, or DuckDB running out of memory, is the database's own (ErrCommit:
// retried from the watermark after a pause). Subjects and Nats-Msg-Ids, which
// may be any bytes, are stored with the bytes that are not UTF-8 written as \xNN.
//
// # Runs
//
// The runs of the analysis (docs/metrics.md) are folds of their events (events.Fold). When a
// run attempt's run.finished is stored, the ingester folds the attempt's events (held in memory
// while the run is open, read back from DuckDB otherwise) and writes one row of run_folds with
// the plan, states, tools, calls, output, their signatures (package metrics) and any fold error;
// a late event of a finished attempt refolds it. The view runs adds the attempts that have not
// finished. Everything is derived from the stream: Rebuild replays it into a fresh file and
// yields identical tables.
package warehouse
