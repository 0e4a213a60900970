//go:build duckdb_arrow

package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
)

// LoadPath names how batches reach DuckDB in this build: "arrow" (build tag duckdb_arrow, a
// registered Arrow view scanned by INSERT … SELECT) or "appender".
const LoadPath = "arrow"

// eventLoader stores record batches of events, and run_folds rows, on one connection through
// two Arrow views, ingest_batch and ingest_folds, each registered once, over a record reader
// it re-arms for every batch (batchFeed), and scanned by an INSERT prepared once. Registering a
// view per batch cost C memory each time: DuckDB's duckdb_arrow_scan takes the stream's schema
// (get_schema) and never releases it (duckdb/duckdb#16050), and every bind of a statement that
// scans the view takes it again and drops the root's release, about 12-16 KB a batch
// (TestLeakProbe). A statement prepared once is bound once.
//
// The views live in feedsDatabase, an in-memory database attached beside the warehouse's, and
// the connection finds them through its search path: a view over an Arrow stream is this
// process's raw pointers, which have no place in the warehouse's file. DuckDB 1.x wrote them
// there; DuckDB 2.0's arrow scan API fails on a persistent database.
//
// newEventLoader must run outside a transaction, so that the views are committed: a view
// registered in a transaction that rolls back would leave its name on an earlier stream.
type eventLoader struct {
	conn   *sql.Conn
	events *arrowView
	folds  *arrowView
}

// newEventLoader registers the views ingest_batch and ingest_folds on conn, outside any
// transaction.
func newEventLoader(conn *sql.Conn) (*eventLoader, error) {
	l := &eventLoader{conn: conn}
	err := l.register()
	if err != nil {
		return nil, err
	}
	// Prepared after both views exist: a statement prepared before a change of the catalog is
	// bound again when it next runs.
	if err = l.events.prepare(conn, queries.IngestEvents.SQL); err == nil {
		err = l.folds.prepare(conn, queries.IngestFolds.SQL)
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// feedsDatabase is the in-memory database the loaders' views are registered in.
const feedsDatabase = "ditto_feeds"

// register registers the loader's views in feedsDatabase (attached if it is not yet) and sets
// the connection's search path to its own database, then feedsDatabase.
func (l *eventLoader) register() (err error) {
	ctx := context.Background()
	var home string
	if err := l.conn.QueryRowContext(ctx, "SELECT current_database()").Scan(&home); err != nil {
		return fmt.Errorf("register arrow views: %w", err)
	}
	// A warehouse written before the views moved to feedsDatabase may still hold them in its
	// own catalog, over streams long freed; first on the search path, they would shadow the
	// loader's own, and binding them crashes the process.
	for _, name := range []string{"ingest_batch", "ingest_folds"} {
		if _, err := l.conn.ExecContext(ctx, "DROP VIEW IF EXISTS "+quoteIdent(home)+".main."+name); err != nil {
			return fmt.Errorf("register arrow views: drop the leftover view %s: %w", name, err)
		}
	}
	if _, err := l.conn.ExecContext(ctx, "ATTACH IF NOT EXISTS ':memory:' AS "+feedsDatabase); err != nil {
		return fmt.Errorf("register arrow views: attach %s: %w", feedsDatabase, err)
	}
	if _, err := l.conn.ExecContext(ctx, "USE "+feedsDatabase); err != nil {
		return fmt.Errorf("register arrow views: %w", err)
	}
	defer func() {
		// The search path's first entry is the database new tables go to: the warehouse's.
		path := quoteIdent(home) + ".main," + feedsDatabase + ".main"
		_, perr := l.conn.ExecContext(ctx, "SET search_path = '"+strings.ReplaceAll(path, "'", "''")+"'")
		if perr != nil && err == nil {
			err = fmt.Errorf("register arrow views: set the search path back: %w", perr)
		}
		if err != nil {
			l.events.close()
			l.folds.close()
			l.events, l.folds = nil, nil
		}
	}()
	if l.events, err = registerView(l.conn, "ingest_batch", eventsViewSchema); err != nil {
		return err
	}
	l.folds, err = registerView(l.conn, "ingest_folds", foldsSchema)
	return err
}

// close drops the views, when the connection is still open, and releases their streams. A
// view left behind (the connection closed first, or the process killed) names a freed stream,
// and binding it crashes the process that does: sqlguard refuses such views in users' SQL. Since
// the views live in feedsDatabase, in memory, none outlives the process; the next loader on a
// warehouse written before that drops those its catalog still holds.
func (l *eventLoader) close() {
	for _, v := range []*arrowView{l.events, l.folds} {
		_, _ = l.conn.ExecContext(context.Background(), "DROP VIEW IF EXISTS "+feedsDatabase+".main."+v.name)
	}
	l.events.close()
	l.folds.close()
}

// load stores rec, a batch of events, in the connection's open transaction.
func (l *eventLoader) load(ctx context.Context, rec arrow.RecordBatch) error {
	rec = asJSONPayload(rec)
	defer rec.Release()
	return l.events.load(ctx, l.conn, rec)
}

// loadFolds stores run_folds rows in the connection's open transaction.
func (l *eventLoader) loadFolds(ctx context.Context, rows []*foldRow) error {
	rec := buildFolds(recordAllocator, rows)
	defer rec.Release()
	return l.folds.load(ctx, l.conn, rec)
}

// arrowView is an Arrow view registered on a connection for the connection's life, over a feed
// re-armed with each record, and the INSERT that scans it, prepared once.
type arrowView struct {
	name    string
	feed    *batchFeed
	sql     string
	insert  driver.Stmt
	release func() // the exported C stream's, after the connection's last scan
}

// registerView registers the view name of schema on conn.
func registerView(conn *sql.Conn, name string, schema *arrow.Schema) (*arrowView, error) {
	v := &arrowView{name: name, feed: &batchFeed{schema: schema}}
	v.feed.refs.Store(1)
	err := conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(unwrapConn(dc))
		if err != nil {
			return err
		}
		if v.release, err = a.RegisterView(v.feed, name); err != nil {
			return fmt.Errorf("register arrow view %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

// prepare prepares insert, the statement that scans the view.
func (v *arrowView) prepare(conn *sql.Conn, insert string) error {
	v.sql = insert
	return conn.Raw(func(dc any) error {
		var err error
		v.insert, err = dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), insert)
		return err
	})
}

func (v *arrowView) close() {
	if v == nil {
		return
	}
	if v.insert != nil {
		_ = v.insert.Close()
		v.insert = nil
	}
	if v.release != nil {
		v.release()
		v.release = nil
	}
	v.feed.Release()
}

// load runs the view's INSERT over rec (in the view's schema). It must store every row of
// rec: a view that scanned another stream (re-registered by another loader on the database) is
// an error, not fewer rows.
func (v *arrowView) load(ctx context.Context, conn *sql.Conn, rec arrow.RecordBatch) error {
	v.feed.arm(rec)
	defer v.feed.arm(nil)
	binds := v.feed.schemas.Load()
	err := conn.Raw(func(any) error {
		res, err := v.insert.(driver.StmtExecContext).ExecContext(ctx, nil)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != rec.NumRows() {
			return fmt.Errorf("%s: the INSERT stored %d of %d rows (%v)", v.name, n, rec.NumRows(), err)
		}
		return nil
	})
	if err == nil && v.feed.schemas.Load() != binds {
		// The catalog changed since the INSERT was prepared, and DuckDB bound it again, as it
		// will at every run from now on (it does not keep the new binding), each time keeping
		// the schema it takes: prepare it again, bound once more.
		_ = v.insert.Close()
		v.insert = nil
		err = v.prepare(conn, v.sql)
	}
	return err
}

// batchFeed is the array.RecordReader behind an eventLoader's view: armed with a record, it
// yields that record once and then ends, for each scan; disarmed, it yields nothing. DuckDB
// calls it from the INSERT's threads while the loader waits for the INSERT, so a mutex orders
// arm against Next.
type batchFeed struct {
	schema  *arrow.Schema
	schemas atomic.Int64 // calls of Schema: DuckDB asks for it at every bind of a scan
	refs    atomic.Int64
	mu      sync.Mutex
	rec     arrow.RecordBatch
	read    bool // rec was yielded to the current scan
	cur     arrow.RecordBatch
}

var _ array.RecordReader = (*batchFeed)(nil)

func (f *batchFeed) arm(rec arrow.RecordBatch) {
	f.mu.Lock()
	f.rec, f.read, f.cur = rec, false, nil
	f.mu.Unlock()
}

func (f *batchFeed) Retain() { f.refs.Add(1) }

// Release drops a reference; the feed holds no memory of its own (the armed record is the
// loader's), so the last one has nothing to free.
func (f *batchFeed) Release() { f.refs.Add(-1) }

func (f *batchFeed) Schema() *arrow.Schema {
	f.schemas.Add(1)
	return f.schema
}

func (f *batchFeed) Next() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rec == nil || f.read {
		f.cur = nil
		return false
	}
	f.read, f.cur = true, f.rec
	return true
}

func (f *batchFeed) RecordBatch() arrow.RecordBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// Record is RecordBatch under its older name.
func (f *batchFeed) Record() arrow.RecordBatch { return f.RecordBatch() }

func (f *batchFeed) Err() error { return nil }

// eventsViewSchema is eventsSchema with the payload column typed as Arrow's JSON extension
// (arrow.json), which DuckDB reads as its JSON type as it is. From a plain string column the
// INSERT casts VARCHAR to JSON, parsing every payload again: 12.2 ms against 7.8 ms of CPU a
// batch of 10,000 events (paired in one process; 0.45 µs/event). The payloads are the bytes
// events.DecodeWithPayload checked (well-formed JSON, UTF-8, no lone surrogate, which DuckDB's
// parser refuses: TestHostileMessagesDoNotStopIngestion), so the second parse found nothing.
var eventsViewSchema = func() *arrow.Schema {
	fields := eventsSchema.Fields()
	fields[payloadColumn].Type = jsonType
	return arrow.NewSchema(fields, nil)
}()

var jsonType = func() arrow.ExtensionType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err) // a string storage is always accepted
	}
	return t
}()

// asJSONPayload returns rec with eventsViewSchema: the same buffers, the payload column
// wrapped in the JSON extension type. The caller releases the result.
func asJSONPayload(rec arrow.RecordBatch) arrow.RecordBatch {
	cols := slices.Clone(rec.Columns())
	payload := array.NewExtensionArrayWithStorage(jsonType, rec.Column(payloadColumn))
	defer payload.Release()
	cols[payloadColumn] = payload
	return array.NewRecordBatch(eventsViewSchema, cols, rec.NumRows())
}
