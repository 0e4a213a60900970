package warehouse

import (
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

// buildFolds converts run_folds rows to one Arrow record batch in foldsSchema, each field of a
// row appended to its column's builder (TestBuildFoldsMatchesValues checks the order against
// values', and values' against the columns' names). The caller releases the record. It takes
// the builders' types from foldsSchema's order: a column added to foldsSchema and not here
// panics at a type assertion, in that test and in every test that ingests a finished run.
func buildFolds(mem memory.Allocator, rows []*foldRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, foldsSchema)
	defer b.Release()
	b.Reserve(len(rows))
	col := 0
	next := func() array.Builder { col++; return b.Field(col - 1) }
	str := func(v string, ok bool) { appendOrNull(next().(*array.StringBuilder), v, ok) }
	i32 := func(v int32, ok bool) { appendOrNull(next().(*array.Int32Builder), v, ok) }
	i64 := func(v int64, ok bool) { appendOrNull(next().(*array.Int64Builder), v, ok) }
	f64 := func(v float64, ok bool) { appendOrNull(next().(*array.Float64Builder), v, ok) }
	boolean := func(v, ok bool) { appendOrNull(next().(*array.BooleanBuilder), v, ok) }
	ts := func(v time.Time, ok bool) {
		appendOrNull(next().(*array.TimestampBuilder), arrow.Timestamp(v.UnixMicro()), ok)
	}
	blob := func(v []byte) { next().(*array.BinaryBuilder).Append(v) }
	for _, r := range rows {
		col = 0
		s := r.started
		str(r.study, true)
		str(r.run, true)
		i32(r.attempt, true)
		str(r.sourceKind, true)
		str(r.sourceID, true)
		str(r.task, s)
		str(r.model, s)
		str(r.condition, s)
		str(r.instance, r.instance != "")
		i32(r.inputIndex, s)
		i32(r.seedIndex, s)
		i64(r.seed, r.hasSeed)
		str(r.components, s)
		boolean(r.simulated, s)
		str(r.status, true)
		boolean(r.success, true)
		str(r.errText, r.errText != "")
		ts(r.startedAt, s)
		ts(r.finishedAt, true)
		f64(r.latencyMS, true)
		f64(r.elapsedMS, s)
		i64(r.promptTokens, true)
		i64(r.completionTokens, true)
		i64(r.tokens, true)
		for _, v := range [...]int32{r.modelCalls, r.toolCalls, r.retries, r.planReprompts, r.rejectedToolCalls, r.validationsFailed} {
			i32(v, true)
		}
		boolean(r.escalated, true)
		for _, v := range [...]string{r.plan, r.states, r.tools, r.calls, r.output} {
			str(v, true)
		}
		for _, sig := range r.sigs {
			blob(sig)
		}
		i32(r.events, true)
		str(r.foldError, r.foldError != "")
		str(r.checkError, r.checkError != "")
		str(r.finishedStatus, true)
		str(r.causeKind, r.hasCause)
		boolean(r.causePermanent, r.hasCause)
		str(r.cause, r.hasCause)
		str(r.inputKey, r.inputKey != "")
	}
	return b.NewRecordBatch()
}

// appendOrNull appends v to b, or a NULL when ok is false.
func appendOrNull[T any](b interface {
	Append(T)
	AppendNull()
}, v T, ok bool) {
	if ok {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}
