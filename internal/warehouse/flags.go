package warehouse

import (
	"flag"
	"path/filepath"
)

// DefaultFile is the database file's name inside the data directory.
const DefaultFile = "ditto.duckdb"

// DefaultPath returns the database file of a data directory.
func DefaultPath(dataDir string) string { return filepath.Join(dataDir, DefaultFile) }

// RegisterFlags binds the database settings to fs. Path's default is "", meaning
// DefaultPath(data dir): resolve it with ResolvePath after parsing.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Path, "db", "", "DuckDB database file (default <data-dir>/"+DefaultFile+")")
	fs.IntVar(&c.Threads, "duckdb-threads", 0, "DuckDB worker threads (0: one per core)")
	fs.StringVar(&c.MemoryLimit, "duckdb-memory", "", "DuckDB memory limit, e.g. 2GB (default: DuckDB's)")
	fs.StringVar(&c.CheckpointThreshold, "duckdb-checkpoint", "", "WAL size that makes DuckDB checkpoint, e.g. 64MB (default: DuckDB's, 16MB)")
}

// ResolvePath fills an empty Path with DefaultPath(dataDir).
func (c *Config) ResolvePath(dataDir string) {
	if c.Path == "" {
		c.Path = DefaultPath(dataDir)
	}
}

// RegisterFlags binds the ingestion settings to fs.
func (c *IngestConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Durable, "durable", DefaultDurable, "JetStream durable consumer name (one per database file)")
	fs.IntVar(&c.BatchSize, "batch-size", DefaultBatchSize, "events per DuckDB transaction (at most)")
	fs.DurationVar(&c.BatchWait, "batch-wait", DefaultBatchWait, "longest a batch fills before it is committed")
	fs.IntVar(&c.MaxAckPending, "max-ack-pending", 0, "messages delivered and not acknowledged (default 5 x batch size)")
	fs.DurationVar(&c.AckWait, "ack-wait", DefaultAckWait, "broker redelivery timeout for unacknowledged messages")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", DefaultStallTimeout, "recreate the consumer from the watermark when nothing is delivered this long while the stream has more")
}
