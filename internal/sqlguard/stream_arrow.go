//go:build duckdb_arrow

package sqlguard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dittolab/ditto/internal/duckconn"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// CanStream reports whether this build can answer queries (Stream): only with the duckdb_arrow
// build tag.
const CanStream = true

// The driver (database/sql) runs every query to a materialized result: DuckDB holds the whole
// answer before the first row is read, so a 10-million-row SELECT costs its full size in the
// analyzer's memory whatever the reader does with it. DuckDB's C API can stream instead
// (duckdb_pending_prepared_streaming: a chunk is computed when it is fetched), and can convert
// each chunk to Arrow itself (duckdb_data_chunk_to_arrow), which maps every DuckDB type to its
// Arrow type. The driver exposes neither on its connection, so openStream reaches the C
// connection handle the driver holds (duckconn.Handle) and calls the C API through the bindings
// the driver itself is built on.

// duckSource is a streaming result of one prepared statement.
type duckSource struct {
	conn    bindings.Connection
	stmt    bindings.PreparedStatement
	pending bindings.PendingResult
	res     bindings.Result
	hasRes  bool
	opts    bindings.ArrowOptions
	hasOpts bool
	schema  *arrow.Schema
	stop    chan struct{} // closed by close: ends the interrupt watcher
	watcher sync.WaitGroup
}

// openStream prepares text on the connection behind dc, binds args and starts it as a
// streaming result. ctx's end interrupts DuckDB, also while chunks are fetched later.
// The handle stays valid after Raw returns because the caller holds the *sql.Conn
// exclusively until the source is closed.
func openStream(ctx context.Context, dc any, text string, args []any) (batchSource, []Column, *arrow.Schema, error) {
	s, cols, schema, err := openDuck(ctx, dc, text, args)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, cols, schema, nil
}

func openDuck(ctx context.Context, dc any, text string, args []any) (_ *duckSource, _ []Column, _ *arrow.Schema, err error) {
	conn, err := duckconn.Handle(dc)
	if err != nil {
		return nil, nil, nil, err
	}
	s := &duckSource{conn: conn, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	s.watcher.Add(1)
	go func() {
		defer s.watcher.Done()
		select {
		case <-ctx.Done():
			bindings.Interrupt(conn)
		case <-s.stop:
		}
	}()

	if bindings.Prepare(conn, text, &s.stmt) == bindings.StateError {
		return nil, nil, nil, errors.New(bindings.PrepareError(s.stmt))
	}
	if err := bindArgs(s.stmt, args); err != nil {
		return nil, nil, nil, err
	}
	if bindings.PendingPreparedStreaming(s.stmt, &s.pending) == bindings.StateError {
		return nil, nil, nil, errors.New(bindings.PendingError(s.pending))
	}
	s.hasRes = true
	if bindings.ExecutePending(s.pending, &s.res) == bindings.StateError {
		return nil, nil, nil, errors.New(bindings.ResultError(&s.res))
	}
	s.opts = bindings.ResultGetArrowOptions(&s.res)
	s.hasOpts = true

	n := bindings.ColumnCount(&s.res)
	names := make([]string, n)
	types := make([]bindings.LogicalType, n)
	cols := make([]Column, n)
	defer func() {
		for i := range types {
			bindings.DestroyLogicalType(&types[i])
		}
	}()
	for i := range n {
		names[i] = bindings.ColumnName(&s.res, i)
		types[i] = bindings.ColumnLogicalType(&s.res, i)
		cols[i] = Column{Name: names[i], Type: typeName(types[i])}
	}
	schema, ed := bindings.NewArrowSchema(s.opts, types, names)
	if err := errorData(ed); err != nil {
		return nil, nil, nil, fmt.Errorf("arrow schema: %w", err)
	}
	s.schema = schema
	return s, cols, schema, nil
}

func (s *duckSource) next() (arrow.RecordBatch, error) {
	chunk := bindings.FetchChunk(s.res)
	if chunk.Ptr == nil {
		if msg := bindings.ResultError(&s.res); msg != "" {
			return nil, errors.New(msg)
		}
		return nil, nil
	}
	defer bindings.DestroyDataChunk(&chunk)
	rec, ed := bindings.DataChunkToArrowArray(s.opts, s.schema, chunk)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("arrow conversion: %w", err)
	}
	return rec, nil
}

func (s *duckSource) close() {
	close(s.stop)
	s.watcher.Wait()
	if s.hasOpts {
		bindings.DestroyArrowOptions(&s.opts)
	}
	if s.hasRes {
		bindings.DestroyResult(&s.res)
	}
	bindings.DestroyPending(&s.pending)
	bindings.DestroyPrepare(&s.stmt)
}

// errorData turns a bindings error into a Go error and frees it.
func errorData(ed bindings.ErrorData) error {
	defer bindings.DestroyErrorData(&ed)
	if bindings.ErrorDataHasError(ed) {
		return errors.New(bindings.ErrorDataMessage(ed))
	}
	return nil
}

// bindArgs binds the values JSON parameters decode to: nil, string, bool, integers, floats.
func bindArgs(stmt bindings.PreparedStatement, args []any) error {
	if want := int(bindings.NParams(stmt)); want != len(args) {
		return fmt.Errorf("the query has %d parameters, %d values were given", want, len(args))
	}
	for i, a := range args {
		idx := bindings.IdxT(i + 1)
		var st bindings.State
		switch v := a.(type) {
		case nil:
			st = bindings.BindNull(stmt, idx)
		case string:
			st = bindings.BindVarchar(stmt, idx, v)
		case bool:
			st = bindings.BindBoolean(stmt, idx, v)
		case int:
			st = bindings.BindInt64(stmt, idx, int64(v))
		case int64:
			st = bindings.BindInt64(stmt, idx, v)
		case float64:
			st = bindings.BindDouble(stmt, idx, v)
		default:
			return fmt.Errorf("parameter $%d: %T is not a string, number, boolean or null", i+1, a)
		}
		if st == bindings.StateError {
			return fmt.Errorf("parameter $%d: %s", i+1, bindings.PrepareError(stmt))
		}
	}
	return nil
}
