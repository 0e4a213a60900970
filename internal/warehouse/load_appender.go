//go:build !duckdb_arrow

package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
)

// LoadPath names how batches reach DuckDB in this build: "arrow" (build tag duckdb_arrow, a
// registered Arrow view scanned by INSERT … SELECT) or "appender".
const LoadPath = "appender"

var _ = queries.IngestEvents // the Arrow build runs it; the appender writes the same columns

// eventLoader stores record batches of events on one connection, row by row through DuckDB's
// appender (the Arrow build registers a view instead).
type eventLoader struct {
	conn *sql.Conn
}

func newEventLoader(conn *sql.Conn) (*eventLoader, error) { return &eventLoader{conn: conn}, nil }

func (l *eventLoader) close() {}

// loadFolds appends run_folds rows to the table run_fold_rows with DuckDB's appender, inside
// the connection's open transaction.
func (l *eventLoader) loadFolds(_ context.Context, rows []foldRow) error {
	return l.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "run_fold_rows")
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := app.AppendRow(r...); err != nil {
				_ = app.Close()
				return err
			}
		}
		return app.Close()
	})
}

// load stores rec inside the connection's open transaction.
func (l *eventLoader) load(_ context.Context, rec arrow.RecordBatch) error {
	return l.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "events")
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
				json.RawMessage(payload.Value(i))); err != nil {
				_ = app.Close()
				return err
			}
		}
		return app.Close()
	})
}
