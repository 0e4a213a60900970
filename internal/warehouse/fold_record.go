package warehouse

import (
	"fmt"
	"reflect"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// foldsSchema is the Arrow schema of a batch of run_folds rows: the columns of table
// run_fold_rows (queries/table_run_fold_rows.sql), in order, which foldRow follows.
// TestFoldsSchemaMatchesTable compares the two.
var foldsSchema = func() *arrow.Schema {
	var (
		str  = arrow.BinaryTypes.String
		i32  = arrow.PrimitiveTypes.Int32
		i64  = arrow.PrimitiveTypes.Int64
		f64  = arrow.PrimitiveTypes.Float64
		boo  = arrow.FixedWidthTypes.Boolean
		ts   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		blob = arrow.BinaryTypes.Binary
	)
	cols := []struct {
		name string
		typ  arrow.DataType
	}{
		{"study", str}, {"run", str}, {"attempt", i32}, {"source_kind", str}, {"source_id", str},
		{"task", str}, {"model", str}, {"condition", str}, {"instance", str},
		{"input_index", i32}, {"seed_index", i32}, {"seed", i64}, {"components", str}, {"simulated", boo},
		{"status", str}, {"success", boo}, {"error", str},
		{"started_at", ts}, {"finished_at", ts}, {"latency_ms", f64}, {"elapsed_ms", f64},
		{"prompt_tokens", i64}, {"completion_tokens", i64}, {"tokens", i64},
		{"model_calls", i32}, {"tool_calls", i32}, {"retries", i32}, {"plan_reprompts", i32},
		{"rejected_tool_calls", i32}, {"validations_failed", i32}, {"escalated", boo},
		{"plan", str}, {"states", str}, {"tools", str}, {"calls", str}, {"output", str},
		{"sig_plan", blob}, {"sig_states", blob}, {"sig_tools", blob}, {"sig_calls", blob},
		{"sig_output", blob}, {"sig_trace", blob},
		{"events", i32}, {"fold_error", str}, {"check_error", str},
		{"finished_status", str}, {"cause_kind", str}, {"cause_permanent", boo}, {"cause", str},
		{"input_key", str},
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true} // DuckDB checks NOT NULL
	}
	return arrow.NewSchema(fields, nil)
}()

// buildFolds converts run_folds rows to one Arrow record batch in foldsSchema. A value of a
// type its column cannot hold is an error naming the column. The caller releases the record.
func buildFolds(mem memory.Allocator, rows []foldRow) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, foldsSchema)
	defer b.Release()
	b.Reserve(len(rows))
	for _, r := range rows {
		if len(r) != len(b.Fields()) {
			return nil, fmt.Errorf("run_fold_rows: a row of %d values for %d columns", len(r), len(b.Fields()))
		}
		for c, v := range r {
			if err := appendValue(b.Field(c), v); err != nil {
				return nil, fmt.Errorf("run_fold_rows column %s: %w", foldsSchema.Field(c).Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// appendValue appends v, a value of a foldRow, to fb; nil is null.
func appendValue(fb array.Builder, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	ok := false
	switch fb := fb.(type) {
	case *array.StringBuilder:
		if ok = appendAs[string](fb, v); !ok {
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.String { // a named string type
				fb.Append(rv.String())
				ok = true
			}
		}
	case *array.Int32Builder:
		ok = appendAs[int32](fb, v)
	case *array.Int64Builder:
		ok = appendAs[int64](fb, v)
	case *array.Float64Builder:
		ok = appendAs[float64](fb, v)
	case *array.BooleanBuilder:
		ok = appendAs[bool](fb, v)
	case *array.BinaryBuilder:
		ok = appendAs[[]byte](fb, v)
	case *array.TimestampBuilder:
		if t, is := v.(time.Time); is {
			fb.Append(arrow.Timestamp(t.UnixMicro()))
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("a %T for a %s column", v, fb.Type())
	}
	return nil
}

// appendAs appends v to b when v is a T, and reports whether it was.
func appendAs[T any](b interface{ Append(T) }, v any) bool {
	x, ok := v.(T)
	if ok {
		b.Append(x)
	}
	return ok
}
