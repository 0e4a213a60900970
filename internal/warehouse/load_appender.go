//go:build !duckdb_arrow

package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
)

// LoadPath names how batches reach DuckDB in this build: "arrow" (build tag duckdb_arrow, a
// registered Arrow view scanned by INSERT … SELECT) or "appender".
const LoadPath = "appender"

// eventLoader stores record batches of events on one connection, row by row through DuckDB's
// appender (the Arrow build registers a view instead).
type eventLoader struct {
	conn *sql.Conn
	// types and columns are the query appender's temporary table ingest_batch (see load).
	types   []duckdb.TypeInfo
	columns []string
}

func newEventLoader(conn *sql.Conn) (*eventLoader, error) {
	types, err := eventsAppendTypes()
	if err != nil {
		return nil, err
	}
	return &eventLoader{conn: conn, types: types, columns: eventsColumns()}, nil
}

func (l *eventLoader) close() {}

// loadFolds appends run_folds rows to the table run_fold_rows with DuckDB's appender, inside
// the connection's open transaction.
func (l *eventLoader) loadFolds(_ context.Context, rows []*foldRow) error {
	return l.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(unwrapConn(dc), "", "run_fold_rows")
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := app.AppendRow(r.values()...); err != nil {
				_ = app.Close()
				return err
			}
		}
		return app.Close()
	})
}

// load stores rec inside the connection's open transaction. The rows go through a query
// appender that runs queries.IngestEvents, as the Arrow build does, over its rows as the table
// ingest_batch (eventsAppendTypes): a table appender, whose payload column is DuckDB's JSON,
// passes every value through encoding/json's Marshal, which rewrites a json.RawMessage (it
// compacts it and writes '<', '>' and '&' as \u003c, \u003e and \u0026), so the stored payload
// was not the producer's bytes and a run's history read back from DuckDB failed to decode
// (its canonical arguments were no longer canonical). Through a VARCHAR column and the INSERT's
// cast to JSON the bytes are kept.
func (l *eventLoader) load(_ context.Context, rec arrow.RecordBatch) error {
	return l.conn.Raw(func(dc any) error {
		app, err := duckdb.NewQueryAppender(unwrapConn(dc), queries.IngestEvents.SQL, "ingest_batch", l.types, l.columns)
		if err != nil {
			return err
		}
		cols := make([]arrow.Array, rec.NumCols())
		for i := range cols {
			cols[i] = rec.Column(i)
		}
		streamSeq := cols[0].(*array.Int64)
		id := cols[1].(*array.String)
		typ := cols[2].(*array.String)
		schema := cols[3].(*array.Int32)
		ts := cols[4].(*array.Timestamp)
		study := cols[5].(*array.String)
		run := cols[6].(*array.String)
		attempt := cols[7].(*array.Int32)
		seq := cols[8].(*array.Int64)
		srcKind := cols[9].(*array.String)
		srcID := cols[10].(*array.String)
		traceID := cols[11].(*array.String)
		spanID := cols[12].(*array.String)
		ignorable := cols[13].(*array.Boolean)
		payload := cols[14].(*array.String)
		nullable := func(a *array.String, i int) driver.Value {
			if a.IsNull(i) {
				return nil
			}
			return a.Value(i)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if err := app.AppendRow(streamSeq.Value(i), id.Value(i), typ.Value(i), schema.Value(i),
				time.UnixMicro(int64(ts.Value(i))).UTC(), study.Value(i), run.Value(i), attempt.Value(i), seq.Value(i),
				srcKind.Value(i), srcID.Value(i), nullable(traceID, i), nullable(spanID, i), ignorable.Value(i),
				payload.Value(i)); err != nil {
				_ = app.Close()
				return err
			}
		}
		return app.Close()
	})
}

// eventsColumns is the names of eventsSchema's columns, which are table events'.
func eventsColumns() []string {
	names := make([]string, eventsSchema.NumFields())
	for i, f := range eventsSchema.Fields() {
		names[i] = f.Name
	}
	return names
}

// eventsAppendTypes is the DuckDB types of eventsSchema's columns for the query appender, the
// payload as VARCHAR (see load).
func eventsAppendTypes() ([]duckdb.TypeInfo, error) {
	types := make([]duckdb.TypeInfo, eventsSchema.NumFields())
	for i, f := range eventsSchema.Fields() {
		var t duckdb.Type
		switch f.Type.ID() {
		case arrow.INT64:
			t = duckdb.TYPE_BIGINT
		case arrow.INT32:
			t = duckdb.TYPE_INTEGER
		case arrow.STRING:
			t = duckdb.TYPE_VARCHAR
		case arrow.TIMESTAMP:
			t = duckdb.TYPE_TIMESTAMP_TZ
		case arrow.BOOL:
			t = duckdb.TYPE_BOOLEAN
		default:
			return nil, fmt.Errorf("warehouse: no appender type for column %s (%s)", f.Name, f.Type)
		}
		info, err := duckdb.NewTypeInfo(t)
		if err != nil {
			return nil, err
		}
		types[i] = info
	}
	return types, nil
}
