package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/duckconn"
	"github.com/dittolab/ditto/queries"
)

// Warehouse is a DuckDB database holding the projection of the event stream. It is safe for
// concurrent use: DB may be queried while Ingest runs (DuckDB isolates readers from the ingest
// transaction). Only one Ingest may run at a time.
type Warehouse struct {
	cfg       Config
	connector *duckconn.Connector
	db        *sql.DB
	gate      *gate // keeps db's other users out of a reattach (gate.go)
	stats     *statsRecorder

	ingestMu sync.Mutex // held by Ingest/CatchUp: one ingester per database

	home     string     // the database's name in DuckDB's catalog (current_database())
	attachMu sync.Mutex // guards detached (reattach)
	detached bool       // a reattach detached the database and has not attached it again
	closeMu  sync.Mutex
	closed   bool
}

// storageVersion is the DuckDB storage format of the databases Open creates. DuckDB writes new
// files readable by v0.10.2 unless told otherwise, which leaves out the string compression its
// later formats have (DICT_FSST, one pass where the older format analyzes both a dictionary and
// FSST for every string column at each checkpoint): the committer spends about 1 µs of CPU an
// event less with it, for files about a tenth larger (docs/benchmarks.md, "2026-12-02, third
// session"). Every reader of the database is this build's DuckDB.
const storageVersion = "v1.5.0"

// Open opens (creating if needed) the database at cfg.Path and creates or updates the schema
// (queries.Schema) unless cfg.ReadOnly.
func Open(ctx context.Context, cfg Config) (*Warehouse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dsn := cfg.Path
	q := url.Values{}
	if cfg.ReadOnly {
		q.Set("access_mode", "read_only")
	}
	if cfg.Threads > 0 {
		q.Set("threads", fmt.Sprint(cfg.Threads))
	}
	if cfg.MemoryLimit != "" {
		q.Set("memory_limit", cfg.MemoryLimit)
	}
	// DuckDB's allocator (jemalloc, in its Linux builds) returns the pages freed and not used
	// again after its decay time (1 s), but only on the thread that next allocates in the same
	// arena, and ingestion's DuckDB work moves between OS threads with its goroutine: without a
	// background thread, the pages of an arena no thread touches again stay resident (after a
	// query that sorted a million strings, 236 MiB of them for as long as one cares to wait;
	// 10–66 MiB between two commits under the 20,000 events/s load even with a release after
	// every commit). jemalloc's background thread returns them within about a second.
	q.Set("allocator_background_threads", "true")
	// Nothing depends on the physical order of rows (every query that wants an order says
	// so), and keeping it costs an INSERT from the Arrow view a quarter of its CPU.
	q.Set("preserve_insertion_order", "false")
	if !cfg.ReadOnly {
		q.Set("checkpoint_threshold", cmp.Or(cfg.CheckpointThreshold, DefaultCheckpointThreshold))
		// A checkpoint writes the rows committed since the one before (in the WAL: the
		// run_folds rows, whose transactions are far short of a row group, and the events of
		// transactions cut short) as new row groups. DuckDB then merges adjacent small row
		// groups, rewriting every column of them (its vacuum tasks): at the 64MB threshold a
		// merge came at about every other checkpoint, and those checkpoints took about 2.2 s
		// against 0.65 for the others, idle (at 16MB, merges of 4–9 s); a commit that
		// checkpoints holds ingestion for all of it (docs/benchmarks.md, twenty-eighth
		// session). No vacuum task runs: a checkpoint's rows stay in the row groups it wrote,
		// and a checkpoint costs what the WAL holds. Rows deleted (a run folded again, an
		// analysis stored again) stay marked deleted in their row group instead of being
		// compacted away; a row group whose rows are all deleted is still dropped at a full
		// checkpoint (DuckDB does that apart from the tasks; ingestion's are full checkpoints).
		q.Set("max_vacuum_tasks", "0")
		// A database this opens creates its file in storageVersion's format; one that exists
		// keeps the format it was created in.
		q.Set("storage_compatibility_version", storageVersion)
	}
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	var init []string
	if cfg.ReadOnly {
		// A database an older build wrote, opened before an ingesting open migrated it,
		// reads as it is (queries.ReadOnlyInit).
		err := duckconn.With(dsn, func(db *sql.DB) (err error) {
			init, err = queries.ReadOnlyInit(ctx, db)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("warehouse: open %q: %w", cfg.Path, err)
		}
	}
	connector, err := duckconn.New(dsn, init...)
	if err != nil {
		return nil, fmt.Errorf("warehouse: open %q: %w", cfg.Path, err)
	}
	g := newGate()
	w := &Warehouse{cfg: cfg, connector: connector, db: sql.OpenDB(&gatedConnector{inner: connector, gate: g}), gate: g, stats: newStatsRecorder()}
	if err := w.db.QueryRowContext(ctx, "SELECT current_database()").Scan(&w.home); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("warehouse: open %q: %w", cfg.Path, err)
	}
	if !cfg.ReadOnly {
		if err := w.createSchema(ctx); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	return w, nil
}

func (w *Warehouse) createSchema(ctx context.Context) error {
	for _, s := range queries.Schema() {
		if s.Name == queries.TableRunFoldRows.Name {
			if err := w.migrateRunFolds(ctx); err != nil {
				return err
			}
		}
		if _, err := w.db.ExecContext(ctx, s.SQL); err != nil {
			return fmt.Errorf("warehouse: schema %s: %w", s.Name, err)
		}
	}
	return nil
}

// migrateRunFolds brings the run folds of a database an older build wrote to this build's
// shape. Builds before run_fold_rows stored them in a table run_folds (the lists as VARCHAR[],
// the signatures as hex text), which is now a view of run_fold_rows: its rows are moved there
// and the table dropped, in one transaction, so that the view then shows the same values. A
// run_folds table that predates the columns this build writes is refused (ErrOldSchema): its
// rows lack the statuses and input keys the analysis needs, and only a replay of the stream
// recomputes them.
func (w *Warehouse) migrateRunFolds(ctx context.Context) error {
	var table, current bool
	if err := w.db.QueryRowContext(ctx, queries.IngestSchemaCheck.SQL).Scan(&table, &current); err != nil {
		return fmt.Errorf("warehouse: schema check: %w", err)
	}
	if !table {
		return nil
	}
	if !current {
		return fmt.Errorf("%w: %s was written by an older ditto (run_folds has no input_key column); rebuild it from the stream: analyzer rebuild", ErrOldSchema, w.cfg.Path)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("warehouse: migrate run_folds: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, s := range []queries.Statement{queries.TableRunFoldRows, queries.MigrateRunFoldsCopy, queries.MigrateRunFoldsDrop} {
		if _, err := tx.ExecContext(ctx, s.SQL); err != nil {
			return fmt.Errorf("warehouse: migrate run_folds (%s): %w", s.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("warehouse: migrate run_folds: %w", err)
	}
	return nil
}

// DB returns the database for queries. Callers must not write to the projection's tables.
func (w *Warehouse) DB() *sql.DB { return w.db }

// Path returns the database file ("" for an in-memory database).
func (w *Warehouse) Path() string { return w.cfg.Path }

// Tables returns the names of the projection's tables and views.
func Tables() []string { return queries.Tables() }

// Position is how far ingestion of a stream has got, as committed in the database.
type Position struct {
	Watermark  uint64 // every message at or below this stream sequence is stored
	Events     int64  // events stored
	Rejected   int64  // messages kept in rejected_events
	Duplicates int64  // events not stored again because their id was already stored
}

// Position reads the committed position for stream ("" means events.EventsStream).
func (w *Warehouse) Position(ctx context.Context, stream string) (Position, error) {
	if stream == "" {
		stream = events.EventsStream
	}
	return readPosition(ctx, w.db, stream)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readPosition(ctx context.Context, q queryer, stream string) (Position, error) {
	var p Position
	var wm int64
	err := q.QueryRowContext(ctx, queries.IngestWatermarkGet.SQL, stream).Scan(&wm, &p.Events, &p.Rejected, &p.Duplicates)
	if errors.Is(err, sql.ErrNoRows) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("warehouse: read position: %w", err)
	}
	p.Watermark = uint64(wm)
	return p, nil
}

// Close closes the database. It does not stop a running Ingest: cancel its context first.
func (w *Warehouse) Close() error {
	w.closeMu.Lock()
	defer w.closeMu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.db.Close()
	if cerr := w.connector.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("warehouse: close: %w", err)
	}
	return nil
}
