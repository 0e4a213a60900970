package analysis

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/dittolab/ditto/queries"
)

// batchQuerier is a Querier that can also give a statement's rows as Arrow record batches, in
// the statement's order; a batch is only valid during the call. loadRuns reads analysis_runs
// (a row a scored run) and analysis_traces through it when it can: at two cells of 10⁶ runs,
// reading analysis_runs with a callback doing nothing took 4.2-4.5 s row by row through
// database/sql (a value per column per row) and 3.0-3.1 s as batches (docs/benchmarks.md).
type batchQuerier interface {
	Querier
	QueryBatches(ctx context.Context, s queries.Statement, args []any, fn func(arrow.RecordBatch) error) error
}

// Snapshot begins a transaction on one of db's connections and returns a Querier over it, which
// reads large results as Arrow record batches when the build has DuckDB's Arrow interface (build
// tag duckdb_arrow) and db is DuckDB, and the function that ends the transaction and gives the
// connection back. Every statement of the Querier sees the same snapshot.
func Snapshot(ctx context.Context, db *sql.DB) (Querier, func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("analysis: connection: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("analysis: begin: %w", err)
	}
	done := func() {
		_ = tx.Rollback() // read-only use; nothing to keep
		_ = conn.Close()
	}
	return txQuerier(conn, tx), done, nil
}

// batchCols reads the columns of a record batch by the Arrow types DuckDB gives its columns,
// keeping the first error; a column's reader returns the zero value for NULL, as row does.
type batchCols struct {
	stmt string
	cols []string // the statement's columns, in order
	rec  arrow.RecordBatch
	err  error
}

// at returns column i after checking that it is the statement's column i.
func (b *batchCols) at(i int) arrow.Array {
	if b.err != nil {
		return nil
	}
	if i >= int(b.rec.NumCols()) || b.rec.ColumnName(i) != b.cols[i] {
		b.err = fmt.Errorf("analysis: %s: column %d is not %s", b.stmt, i, b.cols[i])
		return nil
	}
	return b.rec.Column(i)
}

func (b *batchCols) typeErr(i int, a arrow.Array) {
	b.err = fmt.Errorf("analysis: %s: column %s: unexpected Arrow type %s", b.stmt, b.cols[i], a.DataType())
}

func (b *batchCols) str(i int) func(int) string { return b.strOf(i, b.at(i)) }

// strOf reads a, column i or the values of its lists, as strings.
func (b *batchCols) strOf(i int, a arrow.Array) func(int) string {
	switch c := a.(type) {
	case *array.String:
		return func(j int) string { return nullOr(c, j, c.Value) }
	case *array.LargeString:
		return func(j int) string { return nullOr(c, j, c.Value) }
	case *array.StringView:
		return func(j int) string { return nullOr(c, j, c.Value) }
	case *array.Null:
		return func(int) string { return "" }
	case nil:
	default:
		b.typeErr(i, c)
	}
	return nil
}

func (b *batchCols) int(i int) func(int) int64 {
	switch c := b.at(i).(type) {
	case *array.Int64:
		return func(j int) int64 { return nullOr(c, j, c.Value) }
	case *array.Int32:
		return func(j int) int64 { return int64(nullOr(c, j, c.Value)) }
	case *array.Int16:
		return func(j int) int64 { return int64(nullOr(c, j, c.Value)) }
	case *array.Null:
		return func(int) int64 { return 0 }
	case nil:
	default:
		b.typeErr(i, c)
	}
	return nil
}

func (b *batchCols) float(i int) func(int) float64 {
	switch c := b.at(i).(type) {
	case *array.Float64:
		return func(j int) float64 { return nullOr(c, j, c.Value) }
	case *array.Float32:
		return func(j int) float64 { return float64(nullOr(c, j, c.Value)) }
	case *array.Null:
		return func(int) float64 { return 0 }
	case nil:
	default:
		b.typeErr(i, c)
	}
	return nil
}

func (b *batchCols) bool(i int) func(int) bool {
	switch c := b.at(i).(type) {
	case *array.Boolean:
		return func(j int) bool { return nullOr(c, j, c.Value) }
	case *array.Null:
		return func(int) bool { return false }
	case nil:
	default:
		b.typeErr(i, c)
	}
	return nil
}

// strings reads a column of lists of strings; each row's list is a new slice of copied strings,
// empty (not nil) for NULL.
func (b *batchCols) strings(i int) func(int) []string {
	a := b.at(i)
	var offsets func(int) (int64, int64)
	var values arrow.Array
	switch c := a.(type) {
	case *array.List:
		offsets, values = func(j int) (int64, int64) { return c.ValueOffsets(j) }, c.ListValues()
	case *array.LargeList:
		offsets, values = func(j int) (int64, int64) { return c.ValueOffsets(j) }, c.ListValues()
	case nil:
		return nil
	default:
		b.typeErr(i, a)
		return nil
	}
	elem := (&batchCols{stmt: b.stmt, cols: b.cols}).strOf(i, values)
	if elem == nil {
		b.typeErr(i, a)
		return nil
	}
	return func(j int) []string {
		if a.IsNull(j) {
			return []string{}
		}
		from, to := offsets(j)
		out := make([]string, 0, to-from)
		for k := from; k < to; k++ {
			out = append(out, strings.Clone(elem(int(k))))
		}
		return out
	}
}

// addBatch adds the rows of a record batch of analysis_runs.
func (l *runLoader) addBatch(rec arrow.RecordBatch) error {
	b := batchCols{stmt: queries.AnalysisRuns.Name, cols: runCols, rec: rec}
	task, model, cond, id := b.str(0), b.str(1), b.str(2), b.str(3)
	success, tokens, latency := b.bool(6), b.int(7), b.float(8)
	retries, reprompts, rejected := b.int(9), b.int(10), b.int(11)
	escalated, input, seed := b.bool(12), b.int(13), b.int(14)
	trace, inputKey := b.int(16), b.str(17)
	if b.err != nil {
		return b.err
	}
	v := runValues{views: true}
	for j := range int(rec.NumRows()) {
		v.cell = CellKey{task(j), model(j), cond(j)}
		v.id, v.trace, v.inputKey = id(j), trace(j), inputKey(j)
		v.success, v.escalated = success(j), escalated(j)
		v.tokens, v.latencyMS = tokens(j), latency(j)
		v.retries, v.reprompts, v.rejected = retries(j), reprompts(j), rejected(j)
		v.input, v.seed = input(j), seed(j)
		if err := l.add(&v); err != nil {
			return err
		}
	}
	return nil
}

// nullOr is value(j), or T's zero value where a is NULL (whatever its buffer holds there).
func nullOr[T any](a arrow.Array, j int, value func(int) T) T {
	if a.IsNull(j) {
		var zero T
		return zero
	}
	return value(j)
}

// addBatch adds the rows of a record batch of analysis_traces.
func (t *traceLoader) addBatch(rec arrow.RecordBatch) error {
	b := batchCols{stmt: queries.AnalysisTraces.Name, cols: traceCols, rec: rec}
	task, model, cond, sigTrace, sigTools := b.str(0), b.str(1), b.str(2), b.str(3), b.str(4)
	plan, states, tools, calls, output, runs := b.str(5), b.strings(6), b.strings(7), b.str(8), b.str(9), b.int(10)
	key := b.int(11)
	if b.err != nil {
		return b.err
	}
	v := traceValues{views: true}
	for j := range int(rec.NumRows()) {
		v.key = traceKey{CellKey{task(j), model(j), cond(j)}, key(j)}
		v.sigTrace, v.sigTools = sigTrace(j), sigTools(j)
		v.plan, v.states, v.tools, v.calls, v.output, v.runs = plan(j), states(j), tools(j), calls(j), output(j), runs(j)
		if err := t.add(&v); err != nil {
			return err
		}
	}
	return nil
}

// queryEither runs s through q as record batches (addBatch) when q can give them, else row by
// row (addRow).
func queryEither(ctx context.Context, q Querier, s queries.Statement, args []any,
	addRow func([]any) error, addBatch func(arrow.RecordBatch) error) error {
	if bq, ok := q.(batchQuerier); ok {
		return bq.QueryBatches(ctx, s, args, addBatch)
	}
	return q.Query(ctx, s, args, addRow)
}
