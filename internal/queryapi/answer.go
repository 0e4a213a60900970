package queryapi

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// An answer is written as the query produces it, batch by batch, and never held whole: the
// memory it takes is a batch (DuckDB's 2,048-row chunk) and, for Parquet, one row group. It
// stops at the row limit (sqlguard.Rows) and at the byte limit: a text format stops before the
// row that would take it past the limit, Arrow and Parquet before the batch that would (cut
// to the rows that fit, by their Arrow size). Its end says whether and why it was cut.

// Reasons an answer was cut, in Summary.TruncatedBy and the X-Ditto-Truncated-By header.
const (
	CutRows    = "rows"
	CutBytes   = "bytes"
	CutTimeout = "timeout"
)

// Summary is what the end of an answer reports.
type Summary struct {
	Rows        int           // rows written
	Truncated   bool          // the answer has fewer rows than the query
	TruncatedBy string        // CutRows, CutBytes or CutTimeout
	Elapsed     time.Duration // from the query's acceptance to the answer's end
	Err         error         // a failure that cut the answer (not a limit)
}

// Metadata keys of Arrow fields and of the Parquet footer.
const (
	MetaDuckDBType  = "duckdb.type"     // a field's DuckDB type
	MetaRowCount    = "ditto.row_count" // Parquet footer: rows in the file
	MetaTruncated   = "ditto.truncated" // Parquet footer: true or false
	MetaTruncatedBy = "ditto.truncated_by"
)

// WriteAnswer writes rows in format f to w until the answer ends or a limit cuts it, and
// returns how it ended. It does not close rows. A failure to write to w is returned as the
// error (the reader went away); a failure of the query is Summary.Err.
func WriteAnswer(w io.Writer, f Format, rows *sqlguard.Rows) (Summary, error) {
	cw := &countingWriter{w: w}
	enc, err := newEncoder(f, cw, rows)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	limit := rows.ByteLimit()
	if err := enc.begin(); err != nil {
		return s, err
	}
	for {
		rec := rows.Next()
		if rec == nil {
			break
		}
		budget := limit - cw.n - enc.reserve()
		n, err := enc.batch(rec, budget)
		rec.Release()
		s.Rows += n
		if err != nil {
			return s, err
		}
		flush(w)
		if n < int(rec.NumRows()) {
			s.Truncated, s.TruncatedBy = true, CutBytes
			break
		}
	}
	if err := rows.Err(); err != nil {
		if errors.Is(err, sqlguard.ErrTimeout) {
			s.Truncated, s.TruncatedBy = true, CutTimeout
		} else {
			s.Err = err
		}
	}
	if !s.Truncated && rows.Truncated() {
		s.Truncated, s.TruncatedBy = true, CutRows
	}
	s.Elapsed = rows.Elapsed()
	if err := enc.end(s); err != nil {
		return s, err
	}
	flush(w)
	return s, nil
}

// encoder writes one format.
type encoder interface {
	begin() error
	// batch writes the rows of rec that fit in budget more bytes, in order, and returns how
	// many it wrote.
	batch(rec arrow.RecordBatch, budget int64) (int, error)
	// reserve is the bytes end may still write.
	reserve() int64
	end(s Summary) error
}

func newEncoder(f Format, w io.Writer, rows *sqlguard.Rows) (encoder, error) {
	cols := rows.Columns
	switch f {
	case FormatJSON, FormatJSONL, FormatColumns:
		return newJSONEncoder(f, w, cols), nil
	case FormatCSV:
		return &csvEncoder{w: w, cols: cols}, nil
	case FormatArrow:
		return &arrowEncoder{w: w, schema: fieldSchema(rows.Schema(), cols)}, nil
	case FormatParquet:
		return &parquetEncoder{w: w, schema: fieldSchema(rows.Schema(), cols)}, nil
	}
	return nil, fmt.Errorf("%w: format %q", ErrBadRequest, f)
}

// fieldSchema returns schema with each field's DuckDB type in its metadata.
func fieldSchema(schema *arrow.Schema, cols []sqlguard.Column) *arrow.Schema {
	fields := schema.Fields()
	for i := range fields {
		if i < len(cols) {
			fields[i].Metadata = arrow.NewMetadata([]string{MetaDuckDBType}, []string{cols[i].Type})
		}
	}
	return arrow.NewSchema(fields, nil)
}

// jsonEncoder writes the three JSON shapes.
type jsonEncoder struct {
	w       io.Writer
	f       Format
	cols    []sqlguard.Column
	keys    [][]byte // "name": of each column (records)
	rawJSON []bool
	buf     []byte
	rows    int
}

func newJSONEncoder(f Format, w io.Writer, cols []sqlguard.Column) *jsonEncoder {
	e := &jsonEncoder{w: w, f: f, cols: cols, rawJSON: make([]bool, len(cols))}
	seen := map[string]int{}
	for i, c := range cols {
		e.rawJSON[i] = c.Type == "JSON"
		// Keys of a record are unique: a second column "a" is "a_1", as DuckDB names it in a
		// subquery.
		name := c.Name
		for n := seen[c.Name]; n > 0; n = seen[name] {
			name = c.Name + "_" + strconv.Itoa(n)
			seen[c.Name]++
		}
		seen[name]++
		e.keys = append(e.keys, append(appendJSONString(nil, name), ':'))
	}
	return e
}

func (e *jsonEncoder) begin() error {
	switch e.f {
	case FormatJSON:
		_, err := io.WriteString(e.w, "[")
		return err
	case FormatColumns:
		b := []byte(`{"columns":[`)
		for i, c := range e.cols {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, c.Type)
			b = append(b, '}')
		}
		b = append(b, `],"rows":[`...)
		_, err := e.w.Write(b)
		return err
	}
	return nil
}

func (e *jsonEncoder) reserve() int64 {
	if e.f == FormatColumns {
		return 256
	}
	return 4
}

func (e *jsonEncoder) batch(rec arrow.RecordBatch, budget int64) (int, error) {
	b := e.buf[:0]
	cols := rec.Columns()
	n := 0
	for i := range int(rec.NumRows()) {
		mark := len(b)
		if e.rows > 0 && e.f != FormatJSONL {
			b = append(b, ',')
		}
		if e.f == FormatColumns {
			b = append(b, '[')
			for j, c := range cols {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSON(b, c, i, e.rawJSON[j])
			}
			b = append(b, ']')
		} else {
			b = append(b, '{')
			for j, c := range cols {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, e.keys[j]...)
				b = appendJSON(b, c, i, e.rawJSON[j])
			}
			b = append(b, '}')
			if e.f == FormatJSONL {
				b = append(b, '\n')
			}
		}
		if int64(len(b)) > budget {
			b = b[:mark]
			break
		}
		e.rows++
		n++
	}
	e.buf = b
	_, err := e.w.Write(b)
	return n, err
}

func (e *jsonEncoder) end(s Summary) error {
	switch e.f {
	case FormatJSON:
		_, err := io.WriteString(e.w, "]\n")
		return err
	case FormatColumns:
		b := []byte(`],"row_count":`)
		b = strconv.AppendInt(b, int64(s.Rows), 10)
		b = append(b, `,"truncated":`...)
		b = strconv.AppendBool(b, s.Truncated)
		if s.TruncatedBy != "" {
			b = append(b, `,"truncated_by":`...)
			b = appendJSONString(b, s.TruncatedBy)
		}
		b = append(b, `,"elapsed_ms":`...)
		b = strconv.AppendFloat(b, float64(s.Elapsed.Microseconds())/1000, 'f', 3, 64)
		b = append(b, "}\n"...)
		_, err := e.w.Write(b)
		return err
	}
	return nil
}

// csvEncoder writes RFC 4180 CSV with a header line; NULL is an empty field.
type csvEncoder struct {
	w    io.Writer
	cols []sqlguard.Column
	buf  []byte
	cell []byte
}

func (e *csvEncoder) begin() error {
	var b []byte
	for i, c := range e.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCSVField(b, []byte(c.Name))
	}
	_, err := e.w.Write(append(b, '\n'))
	return err
}

func (e *csvEncoder) reserve() int64 { return 0 }

func (e *csvEncoder) batch(rec arrow.RecordBatch, budget int64) (int, error) {
	b := e.buf[:0]
	cols := rec.Columns()
	n := 0
	for i := range int(rec.NumRows()) {
		mark := len(b)
		for j, c := range cols {
			if j > 0 {
				b = append(b, ',')
			}
			var ok bool
			e.cell, ok = appendText(e.cell[:0], c, i)
			if ok {
				b = appendCSVField(b, e.cell)
			}
		}
		b = append(b, '\n')
		if int64(len(b)) > budget {
			b = b[:mark]
			break
		}
		n++
	}
	e.buf = b
	_, err := e.w.Write(b)
	return n, err
}

func (e *csvEncoder) end(Summary) error { return nil }

// appendCSVField quotes a field when it holds a comma, a quote, a line break or leading or
// trailing space, or is empty text (so that "" differs from NULL's empty field).
func appendCSVField(b, field []byte) []byte {
	if len(field) > 0 && !strings.ContainsAny(string(field), ",\"\r\n") &&
		field[0] != ' ' && field[0] != '\t' && field[len(field)-1] != ' ' {
		return append(b, field...)
	}
	b = append(b, '"')
	for _, c := range field {
		if c == '"' {
			b = append(b, '"')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

// arrowEncoder writes the Arrow IPC stream format.
type arrowEncoder struct {
	w      io.Writer
	schema *arrow.Schema
	wr     *ipc.Writer
	empty  bool
}

func (e *arrowEncoder) begin() error {
	e.wr = ipc.NewWriter(e.w, ipc.WithSchema(e.schema), ipc.WithAllocator(memory.DefaultAllocator))
	e.empty = true
	return nil
}

func (e *arrowEncoder) reserve() int64 { return 16 }

func (e *arrowEncoder) batch(rec arrow.RecordBatch, budget int64) (int, error) {
	rec, n := fitBatch(rec, budget)
	if n == 0 {
		return 0, nil
	}
	defer rec.Release()
	out := array.NewRecordBatch(e.schema, rec.Columns(), rec.NumRows())
	defer out.Release()
	e.empty = false
	return n, e.wr.Write(out)
}

func (e *arrowEncoder) end(Summary) error {
	if e.empty {
		// One empty batch, so that readers that look only at batches see the schema in use.
		cols := make([]arrow.Array, len(e.schema.Fields()))
		for i, f := range e.schema.Fields() {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
			defer cols[i].Release()
		}
		rec := array.NewRecordBatch(e.schema, cols, 0)
		defer rec.Release()
		if err := e.wr.Write(rec); err != nil {
			return err
		}
	}
	return e.wr.Close()
}

// fitBatch returns rec cut to the rows that fit in budget bytes, judged by its Arrow size,
// and their number; the caller releases the returned batch when n > 0.
func fitBatch(rec arrow.RecordBatch, budget int64) (arrow.RecordBatch, int) {
	n := rec.NumRows()
	size := sqlguard.RecordBytes(rec)
	if size <= budget {
		rec.Retain()
		return rec, int(n)
	}
	if budget <= 0 || size == 0 {
		return nil, 0
	}
	fit := n * budget / size
	if fit == 0 {
		return nil, 0
	}
	return rec.NewSlice(0, fit), int(fit)
}

// parquetRowGroup bounds the rows a Parquet row group holds (and so the memory it takes
// before it is written).
const parquetRowGroup = 64 * 1024

// parquetEncoder writes one Parquet file, its footer saying whether the answer was cut.
type parquetEncoder struct {
	w      io.Writer
	schema *arrow.Schema
	fw     *pqarrow.FileWriter
}

func (e *parquetEncoder) begin() error {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroup),
	)
	fw, err := pqarrow.NewFileWriter(e.schema, e.w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return fmt.Errorf("api: parquet: %w", err)
	}
	e.fw = fw
	return nil
}

// reserve leaves room for a row group still buffered and the footer.
func (e *parquetEncoder) reserve() int64 { return 1 << 16 }

func (e *parquetEncoder) batch(rec arrow.RecordBatch, budget int64) (int, error) {
	// The budget counts what reached the writer; a buffered row group is not there yet, so it
	// is counted at its Arrow size.
	buffered := e.fw.RowGroupTotalBytesWritten()
	rec, n := fitBatch(rec, budget-buffered)
	if n == 0 {
		return 0, nil
	}
	defer rec.Release()
	out := array.NewRecordBatch(e.schema, rec.Columns(), rec.NumRows())
	defer out.Release()
	if err := e.fw.WriteBuffered(out); err != nil {
		return 0, fmt.Errorf("api: parquet: %w", err)
	}
	return n, nil
}

func (e *parquetEncoder) end(s Summary) error {
	for k, v := range map[string]string{
		MetaRowCount:    strconv.Itoa(s.Rows),
		MetaTruncated:   strconv.FormatBool(s.Truncated),
		MetaTruncatedBy: s.TruncatedBy,
	} {
		if err := e.fw.AppendKeyValueMetadata(k, v); err != nil {
			return fmt.Errorf("api: parquet: %w", err)
		}
	}
	if err := e.fw.Close(); err != nil {
		return fmt.Errorf("api: parquet: %w", err)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// flush sends what w buffers on, when it can (an http.ResponseWriter, the server's answer
// buffer).
func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}
