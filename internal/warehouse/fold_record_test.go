package warehouse

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFoldsSchemaMatchesTable compares foldsSchema, the Arrow schema of the run_folds rows the
// ingester stores, with the columns of table run_fold_rows as DuckDB created them: the same
// names in the same order, and types that DuckDB stores as the column's type.
func TestFoldsSchemaMatchesTable(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "s.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows, err := w.db.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE table_name = 'run_fold_rows' ORDER BY column_index`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	arrowFor := map[string]string{
		"VARCHAR": "utf8", "INTEGER": "int32", "BIGINT": "int64", "DOUBLE": "float64",
		"BOOLEAN": "bool", "TIMESTAMP WITH TIME ZONE": "timestamp[us, tz=UTC]", "BLOB": "binary",
	}
	i := 0
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		if i >= foldsSchema.NumFields() {
			t.Fatalf("run_fold_rows has column %s (%d) beyond foldsSchema's %d fields", name, i, foldsSchema.NumFields())
		}
		f := foldsSchema.Field(i)
		if f.Name != name || f.Type.String() != arrowFor[typ] {
			t.Errorf("column %d: table has %s %s, foldsSchema %s %s", i, name, typ, f.Name, f.Type)
		}
		i++
	}
	if i != foldsSchema.NumFields() {
		t.Errorf("run_fold_rows has %d columns, foldsSchema %d fields", i, foldsSchema.NumFields())
	}
}

// TestBuildFoldsMatchesValues checks that buildFolds puts each field of a row in its own
// column: every value of the record equals the row's values (what DuckDB's appender stores in a
// build without the Arrow tag), NULL for NULL, and is of the type its column holds. The rows
// are the sample runs' folds, and two made up: one with every nullable column set, one with
// every nullable column NULL.
func TestBuildFoldsMatchesValues(t *testing.T) {
	var rows []*foldRow
	for k, h := range sampleHistories(t) {
		if row, _ := foldHistory(k, h); row != nil {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		t.Fatal("no run in the sample folds")
	}
	bare := &foldRow{study: "s", run: "r", attempt: 2, status: "ok", finishedAt: time.UnixMicro(5).UTC()}
	rows = append(rows, probeFoldRow(7), bare)
	rec := buildFolds(memory.DefaultAllocator, rows)
	defer rec.Release()
	if int(rec.NumRows()) != len(rows) || int(rec.NumCols()) != foldsSchema.NumFields() {
		t.Fatalf("record of %d rows and %d columns, want %d and %d", rec.NumRows(), rec.NumCols(), len(rows), foldsSchema.NumFields())
	}
	nulls := 0
	for i, r := range rows {
		vals := r.values()
		if len(vals) != foldsSchema.NumFields() {
			t.Fatalf("row %d: %d values for %d columns", i, len(vals), foldsSchema.NumFields())
		}
		for c, v := range vals {
			name, col := foldsSchema.Field(c).Name, rec.Column(c)
			if v == nil || col.IsNull(i) {
				if v != nil || !col.IsNull(i) {
					t.Errorf("row %d column %s: record null %v, value %#v", i, name, col.IsNull(i), v)
				}
				nulls++
				continue
			}
			var got any
			switch col := col.(type) {
			case *array.String:
				got = col.Value(i)
			case *array.Int32:
				got = col.Value(i)
			case *array.Int64:
				got = col.Value(i)
			case *array.Float64:
				got = col.Value(i)
			case *array.Boolean:
				got = col.Value(i)
			case *array.Binary:
				got = col.Value(i)
			case *array.Timestamp:
				got = time.UnixMicro(int64(col.Value(i))).UTC()
			}
			if b, ok := v.([]byte); ok && b == nil {
				v = []byte{} // the empty blob a nil signature appends (never a fold's)
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("row %d column %s: record %#v, value %#v", i, name, got, v)
			}
		}
	}
	if nulls == 0 {
		t.Error("no NULL compared")
	}
	// bare's nullable columns are all NULL, probeFoldRow's none.
	for c, v := range bare.values() {
		if name := foldsSchema.Field(c).Name; v != nil && !slices.Contains([]string{"study", "run", "attempt",
			"source_kind", "source_id", "status", "success", "finished_at", "latency_ms", "prompt_tokens",
			"completion_tokens", "tokens", "model_calls", "tool_calls", "retries", "plan_reprompts",
			"rejected_tool_calls", "validations_failed", "escalated", "plan", "states", "tools", "calls",
			"output", "sig_plan", "sig_states", "sig_tools", "sig_calls", "sig_output", "sig_trace", "events",
			"finished_status"}, name) {
			t.Errorf("column %s of a row without run.started, seed, cause or errors: %#v, want NULL", name, v)
		}
	}
	for c, v := range probeFoldRow(7).values() {
		if v == nil {
			t.Errorf("column %s of a row with every value: NULL", foldsSchema.Field(c).Name)
		}
	}
}

// probeFoldRow is a run_folds row of attempt i of run "probe": a value in every column.
func probeFoldRow(i int) *foldRow {
	const p = "probe"
	n, t, sig := int32(i), time.UnixMicro(int64(i)).UTC(), []byte{byte(i)}
	return &foldRow{
		study: p, run: p, attempt: n, sourceKind: p, sourceID: p,
		started: true, task: p, model: p, condition: p, instance: p, inputIndex: n, seedIndex: n,
		seed: int64(i), hasSeed: true, components: p, simulated: true,
		status: p, success: true, errText: p, startedAt: t, finishedAt: t,
		latencyMS: float64(i), elapsedMS: float64(i),
		promptTokens: int64(i), completionTokens: int64(i), tokens: int64(i),
		modelCalls: n, toolCalls: n, retries: n, planReprompts: n, rejectedToolCalls: n, validationsFailed: n,
		escalated: true, plan: p, states: p, tools: p, calls: p, output: p,
		sigs:   [6][]byte{sig, sig, sig, sig, sig, sig},
		events: n, foldError: p, checkError: p, finishedStatus: p,
		hasCause: true, causeKind: p, causePermanent: true, cause: p, inputKey: p,
	}
}
