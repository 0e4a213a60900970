package warehouse

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
)

// Config says which DuckDB database to open.
type Config struct {
	// Path is the DuckDB file; "" opens an in-memory database (tests, benchmarks).
	Path string
	// ReadOnly opens an existing file without creating or migrating the schema. DuckDB lets only
	// one process open a file while another writes it, even read-only.
	ReadOnly bool
	// Threads bounds DuckDB's worker threads (0: DuckDB's default, one per core).
	Threads int
	// MemoryLimit caps DuckDB's buffer pool, e.g. "1GB" ("" : DuckDB's default, 80% of RAM).
	MemoryLimit string
	// CheckpointThreshold is the WAL size that makes DuckDB checkpoint, e.g. "256MB" (""
	// : DefaultCheckpointThreshold). Larger means fewer, larger checkpoints, and a longer WAL
	// replay when the database opens after a crash.
	CheckpointThreshold string
}

// DefaultCheckpointThreshold is the WAL size that makes DuckDB checkpoint when
// Config.CheckpointThreshold is empty: 64MB, where DuckDB's own default is 16MB. A transaction
// of a whole row group of events writes them to the database file, so the WAL holds the
// run_folds rows (a few thousand a transaction) and the events of transactions cut short; each
// checkpoint writes them as new row groups, and since Open turns off DuckDB's merging of small
// row groups (max_vacuum_tasks), a checkpoint costs what the WAL holds: the larger the
// threshold, the longer the commit that checkpoints holds ingestion, and the longer the WAL
// replay when the database opens after a crash (about 1 s of CPU per 30MB of WAL here); the
// smaller, the more row groups, each smaller. (Before the merging was off, every merge step
// rewrote the rows again, and 64MB had been chosen for making fewer of them than 16MB:
// docs/benchmarks.md, "Checkpoints" and "twenty-eighth session".)
const DefaultCheckpointThreshold = "64MB"

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if c.ReadOnly && c.Path == "" {
		return fmt.Errorf("%w: read-only needs a file path", ErrConfig)
	}
	if c.Threads < 0 {
		return fmt.Errorf("%w: threads %d", ErrConfig, c.Threads)
	}
	return nil
}

// IngestConfig tunes ingestion. The zero value is usable: every zero field takes its default.
type IngestConfig struct {
	// Stream is the stream to ingest (default events.EventsStream).
	Stream string
	// Durable names the JetStream durable consumer (default events.AnalyzerConsumer). One
	// database file, one durable name: two analyzers with different files must not share a name.
	Durable string
	// BatchSize bounds the events of one fetched batch (default 10,240): the unit the fetcher
	// decodes and hands the committer, two at most in flight.
	BatchSize int
	// TxnBatches bounds the fetched batches one DuckDB transaction stores (default 12: with the
	// default BatchSize, one DuckDB row group, RowGroupRows). While batches fill (by count or
	// bytes) before BatchWait, with a backlog or (when TxnBatches × BatchSize is a row group) at
	// a rate that fills one within BatchWait, the committer keeps the transaction open after
	// storing a batch and stores the next one in it,
	// up to this many, then commits and acknowledges them all; each batch's messages and record
	// are let go once stored (its run_folds rows wait for the COMMIT, at most foldFlushRows of
	// them). A batch cut by BatchWait commits alone as soon as it is stored, and an open
	// transaction commits when no next batch comes within BatchWait. A transaction costs DuckDB
	// a fixed part whatever its size (the COMMIT, and its run_folds rows above all: a few
	// hundred rows of 49 columns), which larger transactions share; one of a whole row group
	// costs DuckDB least (RowGroupRows). At a steady rate its events become visible up to
	// TxnBatches × BatchSize events later. 1 commits every batch alone.
	TxnBatches int
	// BatchWait bounds how long a batch fills before it is committed anyway (default 1s: at
	// 20,000 events/s a batch of 10,240 fills in 0.51 s, and only full batches keep a
	// transaction open; it was 500ms until 2026-12-04). While messages are published to the
	// stream, a pause does not cut a batch short (gatherer.quiet): a live stream's last events
	// are committed up to about BatchWait after they came.
	BatchWait time.Duration
	// MaxBatchBytes bounds the message bytes of one batch (default 32 MiB).
	MaxBatchBytes int
	// MaxAckPending bounds the messages delivered and not yet acknowledged, the broker side of
	// flow control (default (TxnBatches + 2) × BatchSize: the TxnBatches batches an open
	// transaction holds unacknowledged, and two more, which while it commits are the batch
	// waiting in the hand-over and the one being gathered, the client's pull ahead among
	// them). It does not size what the analyzer holds: the messages of a transaction's stored
	// batches are let go, and the client pulls about 3 MiB of messages ahead (a count from the
	// stream's mean message size, at most a batch). A batch more lets the client's buffer fill
	// too while a transaction commits: BenchmarkIngest's ratio rose by 0.013–0.02 and its peak
	// heap by 2–6 MiB, past its goal (docs/benchmarks.md, fifteenth session).
	MaxAckPending int
	// AckWait is how long the broker waits for an ack before redelivering (default 60s). A
	// redelivered message at or below the watermark is acknowledged without being stored again.
	AckWait time.Duration
	// MaxOpenEvents bounds the events of unfinished run attempts held in memory for the fold
	// (default 50,000). Beyond it the fold of an attempt reads its events back from DuckDB.
	MaxOpenEvents int
	// StallTimeout is how long ingestion waits with no message delivered while the stream holds
	// messages beyond the watermark before it deletes the consumer and creates it again from the
	// watermark (default DefaultStallTimeout, at least 4 × BatchWait). A consumer can stop
	// delivering without an error after it lost quorum and changed leader; this is the
	// watchdog that notices. Each further reset without progress doubles the wait (up to 32×).
	StallTimeout time.Duration
	// ReattachEvents, when positive, returns the memory DuckDB keeps for the row groups
	// ingestion appends (about 100 KB each, for as long as the database is attached;
	// reattach.go): after a commit that checkpointed the database, once at least this many
	// events were committed since it was last attached, ingestion detaches the database and
	// attaches it again before its next transaction (tens of milliseconds, the WAL being empty).
	// It waits for a checkpoint, so the interval is also the checkpoint threshold's: with
	// transactions of whole row groups, whose events skip the WAL, a checkpoint of 256MB comes
	// about every 4.7 million events. DB's other users are kept out of it by a gate (gate.go):
	// the reattach begins only when none of them holds one of DB's connections (else it is put
	// off to the next transaction), and a connection asked for meanwhile waits for it. Another
	// process that opens the file in that moment (its lock let go) holds it until it ends, and
	// ingestion waits for that. analyzer ingest and serve set it (--reattach-every).
	// 0 (the default) never re-attaches.
	ReattachEvents int64
	// Logger receives the watchdog's warnings (default slog.Default()).
	Logger *slog.Logger
	// Hooks are test hooks (nil in production).
	Hooks *Hooks
}

// Defaults.
const (
	DefaultBatchSize     = 10_240
	DefaultBatchWait     = time.Second
	DefaultMaxBatchBytes = 32 << 20
	DefaultTxnBatches    = RowGroupRows / DefaultBatchSize
	DefaultAckWait       = 60 * time.Second
	DefaultMaxOpenEvents = 50_000
	DefaultStallTimeout  = 15 * time.Second
)

// RowGroupRows is DuckDB's row group (122,880 rows), the unit DefaultBatchSize and
// DefaultTxnBatches are chosen by: a transaction of a backlog, DefaultTxnBatches full batches,
// appends exactly one. DuckDB's commit then moves the row group it already compressed and wrote
// into the database file straight into the table (LocalStorage::Flush: a transaction appending
// at least a row group "bulk appends"), where a smaller transaction's rows go to the WAL first
// and are compressed and written again at the next checkpoint. Measured on 2026-12-04
// (docs/benchmarks.md, fourteenth session): BenchmarkIngest's analyzer spent a median of 7.65
// µs of CPU an event against 9.0 with batches of 10,000 and transactions of 4, runs alternating. A transaction of 12 batches of 10,000 (120,000 rows) stays
// below the row group and gains nothing; one of 13 writes a row group and a 7,120-row
// remainder as a row group of its own.
const RowGroupRows = 122_880

func (c IngestConfig) withDefaults() IngestConfig {
	if c.Stream == "" {
		c.Stream = events.EventsStream
	}
	if c.Durable == "" {
		c.Durable = events.AnalyzerConsumer
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchWait == 0 {
		c.BatchWait = DefaultBatchWait
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.TxnBatches == 0 {
		c.TxnBatches = DefaultTxnBatches
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = (c.TxnBatches + 2) * c.BatchSize
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxOpenEvents == 0 {
		c.MaxOpenEvents = DefaultMaxOpenEvents
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	c.StallTimeout = max(c.StallTimeout, 4*c.BatchWait)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// consumer describes the durable consumer of c (defaults applied).
func (c IngestConfig) consumer() bus.IngestConsumer {
	return bus.IngestConsumer{Stream: c.Stream, Durable: c.Durable, AckWait: c.AckWait, MaxAckPending: c.MaxAckPending}
}

// Validate reports the first invalid setting.
func (c IngestConfig) Validate() error {
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("%w: batch size %d", ErrConfig, c.BatchSize)
	case c.TxnBatches < 0:
		return fmt.Errorf("%w: batches a transaction %d", ErrConfig, c.TxnBatches)
	case c.BatchWait < 0:
		return fmt.Errorf("%w: batch wait %v", ErrConfig, c.BatchWait)
	case c.MaxBatchBytes < 0 || (c.MaxBatchBytes > 0 && c.MaxBatchBytes < events.MaxEventSize):
		return fmt.Errorf("%w: max batch bytes %d, want >= %d (one event)", ErrConfig, c.MaxBatchBytes, events.MaxEventSize)
	case c.MaxAckPending < 0 || (c.MaxAckPending > 0 && c.MaxAckPending < c.withDefaults().BatchSize):
		return fmt.Errorf("%w: max ack pending %d, want >= batch size", ErrConfig, c.MaxAckPending)
	case c.AckWait < 0 || (c.AckWait > 0 && c.AckWait < 100*time.Millisecond):
		return fmt.Errorf("%w: ack wait %v", ErrConfig, c.AckWait)
	case c.MaxOpenEvents < 0:
		return fmt.Errorf("%w: max open events %d", ErrConfig, c.MaxOpenEvents)
	case c.StallTimeout < 0:
		return fmt.Errorf("%w: stall timeout %v", ErrConfig, c.StallTimeout)
	case c.ReattachEvents < 0:
		return fmt.Errorf("%w: reattach every %d events", ErrConfig, c.ReattachEvents)
	}
	if c.Durable != "" {
		if err := events.ValidateToken("durable", c.Durable); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	return nil
}

// Hooks let tests stop ingestion at the points where a crash matters. A hook that returns an
// error makes Ingest return it (wrapped in ErrHook) at once, without acknowledging anything
// further, as if the process had died there.
type Hooks struct {
	// The hooks take the number of a fetched batch (1, 2, … in the order the committer takes
	// them); a transaction that stores several batches calls each hook once per batch, in
	// order.
	//
	// AfterFetch runs after a batch is fetched and decoded, before its transaction begins.
	AfterFetch func(batch int) error
	// AfterCommit runs after a batch's transaction commits, before its messages are acked.
	AfterCommit func(batch int) error
	// BeforeCommit runs inside a batch's transaction just before COMMIT; an error it returns
	// is handled as a DuckDB failure (the transaction is rolled back, ErrCommit).
	BeforeCommit func(batch int) error
	// SkipAck, when it returns true for one of a transaction's batches, leaves the committed
	// transaction unacknowledged (as if the acks were lost) and goes on: the broker redelivers
	// it after AckWait.
	SkipAck func(batch int) bool
}
