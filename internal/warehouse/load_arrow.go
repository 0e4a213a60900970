//go:build duckdb_arrow

package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
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

// eventLoader stores record batches of events on one connection through the Arrow view
// ingest_batch, which it registers once, over a record reader it re-arms for every batch
// (batchFeed). Registering a view per batch cost C memory each time: DuckDB's
// duckdb_arrow_scan takes the stream's schema (get_schema) and never releases it
// (duckdb/duckdb#16050), about 12 KB a batch (TestLeakProbe). The view's scans take the schema
// through DuckDB's stream factory, which releases it, so one registration leaks once.
//
// newEventLoader must run outside a transaction, so that the view is committed: a view
// registered in a transaction that rolls back would leave ingest_batch naming an earlier stream.
type eventLoader struct {
	conn    *sql.Conn
	feed    *batchFeed
	insert  driver.Stmt // queries.IngestEvents, prepared once: bound once
	release func()      // the exported C stream's, after the connection's last scan
}

// newEventLoader registers the view ingest_batch on conn, outside any transaction.
func newEventLoader(conn *sql.Conn) (*eventLoader, error) {
	l := &eventLoader{conn: conn, feed: &batchFeed{}}
	l.feed.refs.Store(1)
	err := conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		if l.release, err = a.RegisterView(l.feed, "ingest_batch"); err != nil {
			return fmt.Errorf("register arrow view: %w", err)
		}
		l.insert, err = dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), queries.IngestEvents.SQL)
		return err
	})
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// close releases the view's stream. The connection must not scan ingest_batch again.
func (l *eventLoader) close() {
	if l.insert != nil {
		_ = l.insert.Close()
		l.insert = nil
	}
	if l.release != nil {
		l.release()
		l.release = nil
	}
	l.feed.Release()
}

// load stores rec in the connection's open transaction. The INSERT must store every row of
// rec: a view that scanned another stream (re-registered by another loader on the database) is
// an error, not a smaller batch.
func (l *eventLoader) load(ctx context.Context, rec arrow.RecordBatch) error {
	rec = asJSONPayload(rec)
	defer rec.Release()
	return l.use(rec, func(any) error {
		res, err := l.insert.(driver.StmtExecContext).ExecContext(ctx, nil)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != rec.NumRows() {
			return fmt.Errorf("ingest_batch: the INSERT stored %d of %d events (%v)", n, rec.NumRows(), err)
		}
		return nil
	})
}

// use arms the feed with rec (already in eventsViewSchema), runs fn with the driver's
// connection, and disarms the feed.
func (l *eventLoader) use(rec arrow.RecordBatch, fn func(dc any) error) error {
	l.feed.arm(rec)
	defer l.feed.arm(nil)
	return l.conn.Raw(fn)
}

// batchFeed is the array.RecordReader behind an eventLoader's view: armed with a record, it
// yields that record once and then ends, for each scan; disarmed, it yields nothing. DuckDB
// calls it from the INSERT's threads while the loader waits for the INSERT, so a mutex orders
// arm against Next.
type batchFeed struct {
	refs atomic.Int64
	mu   sync.Mutex
	rec  arrow.RecordBatch
	read bool // rec was yielded to the current scan
	cur  arrow.RecordBatch
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

func (f *batchFeed) Schema() *arrow.Schema { return eventsViewSchema }

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
