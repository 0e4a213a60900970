package sqlguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrNoArrow is returned by Stream in a build without the duckdb_arrow tag: answers are read
// through DuckDB's Arrow conversion, which the driver compiles only with that tag (the
// Makefile sets it for every build of the analyzer).
var ErrNoArrow = errors.New("sqlguard: built without the duckdb_arrow tag: queries cannot be streamed (build with -tags duckdb_arrow)")

// batchSource is a running query's result: DuckDB's streaming result converted chunk by chunk.
type batchSource interface {
	// next returns the next batch (owned by the caller, who releases it), or nil at the end.
	next() (arrow.RecordBatch, error)
	// close stops the query and frees the result. It is called once.
	close()
}

// Rows is a running query's answer, read as Arrow record batches while DuckDB produces them
// (a streaming result: DuckDB holds a few chunks, never the whole answer). The query holds its
// connection, its read-only transaction and its slot until Close, and its timeout runs until
// then too: a reader that stops reading still lets it go at the deadline.
//
// Rows is not safe for concurrent use.
type Rows struct {
	// Columns are the answer's columns with DuckDB's type names.
	Columns []Column

	schema    *arrow.Schema
	src       batchSource
	limit     int   // rows
	bytes     int64 // for the encoder
	rows      int
	truncated bool
	err       error
	start     time.Time
	ctx       context.Context // the caller's
	qctx      context.Context // the query's, with its timeout
	timeout   time.Duration
	release   func() // ends the transaction, the connection and the slot
}

// Schema returns the Arrow schema of the batches, as DuckDB converts its types: lists are
// lists, structs structs, TIMESTAMPTZ a timestamp with a time zone, HUGEINT a decimal(38,0).
func (r *Rows) Schema() *arrow.Schema { return r.schema }

// Next returns the next batch, cut so that the answer holds at most the row limit, or nil when
// the answer ends (Err tells whether it ended by an error). The caller releases the batch.
func (r *Rows) Next() arrow.RecordBatch {
	if r.err != nil || r.src == nil || r.rows >= r.limit {
		return nil
	}
	for {
		rec, err := r.src.next()
		if err != nil {
			r.err = r.classify(err)
			return nil
		}
		if rec == nil {
			return nil
		}
		n := int(rec.NumRows())
		if n == 0 {
			rec.Release()
			continue
		}
		if left := r.limit - r.rows; n > left {
			cut := rec.NewSlice(0, int64(left))
			rec.Release()
			rec, n = cut, left
			r.truncated = true
		} else if r.rows+n == r.limit {
			// The limit is reached exactly: one more row tells whether the answer had more.
			r.truncated = r.peekMore()
		}
		r.rows += n
		return rec
	}
}

// peekMore reads ahead for one more row after the limit.
func (r *Rows) peekMore() bool {
	for {
		rec, err := r.src.next()
		if err != nil || rec == nil {
			return false
		}
		n := rec.NumRows()
		rec.Release()
		if n > 0 {
			return true
		}
	}
}

// Truncated reports whether the row limit cut the answer (known once Next has returned nil or
// the limit was reached).
func (r *Rows) Truncated() bool { return r.truncated }

// ByteLimit returns the answer's byte limit, which the encoder of the answer applies.
func (r *Rows) ByteLimit() int64 { return r.bytes }

// RowCount returns the rows returned by Next so far.
func (r *Rows) RowCount() int { return r.rows }

// Err returns the error that ended the answer early, classified as Query's are.
func (r *Rows) Err() error { return r.err }

// Elapsed returns the time since the query was accepted.
func (r *Rows) Elapsed() time.Duration { return time.Since(r.start) }

// Close stops the query (if it still runs) and gives back its connection and slot. It may be
// called more than once.
func (r *Rows) Close() {
	if r.src != nil {
		r.src.close()
		r.src = nil
	}
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

func (r *Rows) classify(err error) error {
	if r.ctx.Err() == nil && errors.Is(r.qctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrTimeout, r.timeout, context.DeadlineExceeded)
	}
	if cerr := r.ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlguard: %w", cerr)
	}
	return fmt.Errorf("%w: %w", ErrQuery, err)
}

// RecordBytes returns the bytes of a batch's Arrow buffers (the part a slice spans is not
// computed: a slice counts its whole buffers).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += dataBytes(dict)
	}
	return n
}
