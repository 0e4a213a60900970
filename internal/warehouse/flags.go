package warehouse

import (
	"flag"
	"path/filepath"

	"github.com/dittolab/ditto/events"
)

// DefaultFile is the database file's name inside the data directory.
const DefaultFile = "ditto.duckdb"

// DefaultPath returns the database file of a data directory.
func DefaultPath(dataDir string) string { return filepath.Join(dataDir, DefaultFile) }

// IngestThreads is the DuckDB threads of a process that only ingests (analyzer ingest and
// rebuild): one. An INSERT of a batch from the Arrow view gains no speed from more threads and
// costs more CPU (BenchmarkIngest: 19 µs against 23 µs of CPU an event with two threads on
// two cores), CPU that decoding, on every core, needs.
const IngestThreads = 1

// RegisterFlags binds the database settings to fs, DuckDB's threads defaulting to one per
// core. Path's default is "", meaning DefaultPath(data dir): resolve it with ResolvePath after
// parsing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) { c.RegisterFlagsThreads(fs, 0) }

// RegisterFlagsThreads is RegisterFlags with another default for --duckdb-threads.
func (c *Config) RegisterFlagsThreads(fs *flag.FlagSet, threads int) {
	fs.StringVar(&c.Path, "db", "", "DuckDB database file (default <data-dir>/"+DefaultFile+")")
	fs.IntVar(&c.Threads, "duckdb-threads", threads, "DuckDB worker threads (0: one per core)")
	fs.StringVar(&c.MemoryLimit, "duckdb-memory", "", "DuckDB memory limit, e.g. 2GB (default: DuckDB's)")
	fs.StringVar(&c.CheckpointThreshold, "duckdb-checkpoint", DefaultCheckpointThreshold, "WAL size that makes DuckDB checkpoint, e.g. 256MB (larger: fewer checkpoints, a longer WAL replay after a crash)")
}

// ResolvePath fills an empty Path with DefaultPath(dataDir).
func (c *Config) ResolvePath(dataDir string) {
	if c.Path == "" {
		c.Path = DefaultPath(dataDir)
	}
}

// RegisterFlags binds the ingestion settings to fs.
func (c *IngestConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Durable, "durable", events.AnalyzerConsumer, "JetStream durable consumer name (one per database file)")
	fs.IntVar(&c.BatchSize, "batch-size", DefaultBatchSize, "events per fetched batch (at most)")
	fs.IntVar(&c.TxnBatches, "txn-batches", DefaultTxnBatches, "fetched batches one DuckDB transaction holds open with a backlog (at most)")
	fs.DurationVar(&c.BatchWait, "batch-wait", DefaultBatchWait, "longest a batch fills before it is committed")
	fs.IntVar(&c.MaxAckPending, "max-ack-pending", 0, "messages delivered and not acknowledged (default (txn-batches + 2) x batch size)")
	fs.DurationVar(&c.AckWait, "ack-wait", DefaultAckWait, "broker redelivery timeout for unacknowledged messages")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", DefaultStallTimeout, "recreate the consumer from the watermark when nothing is delivered this long while the stream has more")
}
