package warehouse

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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
// build without the Arrow tag), NULL for NULL, and is of the type its column holds; and that
// each of the row's values is in the column its name says. The rows are the sample runs' folds
// and three made up: two with every column set, each column to a value of its own
// (probeFoldRow), and one with every nullable column NULL.
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
	rows = append(rows, probeFoldRow(3), probeFoldRow(5), bare)
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
	// Each column's value is the one its name asks for, which ties values, and through it
	// buildFolds, to the columns' meaning.
	for _, i := range []int{3, 5} {
		for c, v := range probeFoldRow(i).values() {
			if want := probeValue(i, c); !reflect.DeepEqual(v, want) {
				t.Errorf("probeFoldRow(%d) column %s: %#v, want %#v", i, foldsSchema.Field(c).Name, v, want)
			}
		}
	}
}

// probeFoldRow is a run_folds row of attempt i of run "run", with a value in every column and
// each column's value its own (probeValue): a string or blob column holds its name, a number
// column i×100 plus its index (attempt: i), a boolean column bit k of i (k counting the boolean
// columns), so that no two columns of a type hold the same value in both probeFoldRow(3) and
// probeFoldRow(5).
func probeFoldRow(i int) *foldRow {
	n := func(c int) int32 { return int32(i*100 + c) }
	bit := func(k int) bool { return i>>k&1 == 1 }
	at := func(c int) time.Time { return time.UnixMicro(int64(i*100 + c)).UTC() }
	return &foldRow{
		study: "study", run: "run", attempt: int32(i), sourceKind: "source_kind", sourceID: "source_id",
		started: true, task: "task", model: "model", condition: "condition", instance: "instance",
		inputIndex: n(9), seedIndex: n(10), seed: int64(n(11)), hasSeed: true,
		components: "components", simulated: bit(0),
		status: "status", success: bit(1), errText: "error", startedAt: at(17), finishedAt: at(18),
		latencyMS: float64(n(19)), elapsedMS: float64(n(20)),
		promptTokens: int64(n(21)), completionTokens: int64(n(22)), tokens: int64(n(23)),
		modelCalls: n(24), toolCalls: n(25), retries: n(26), planReprompts: n(27),
		rejectedToolCalls: n(28), validationsFailed: n(29), escalated: bit(2),
		plan: "plan", states: "states", tools: "tools", calls: "calls", output: "output",
		sigs: [6][]byte{[]byte("sig_plan"), []byte("sig_states"), []byte("sig_tools"), []byte("sig_calls"),
			[]byte("sig_output"), []byte("sig_trace")},
		events: n(42), foldError: "fold_error", checkError: "check_error", finishedStatus: "finished_status",
		hasCause: true, causeKind: "cause_kind", causePermanent: bit(3), cause: "cause", inputKey: "input_key",
	}
}

// probeValue is the value probeFoldRow(i) is to hold in column c, as values gives it.
func probeValue(i, c int) any {
	f := foldsSchema.Field(c)
	switch f.Type.ID() {
	case arrow.STRING:
		return f.Name
	case arrow.BINARY:
		return []byte(f.Name)
	case arrow.BOOL:
		k := 0
		for _, g := range foldsSchema.Fields()[:c] {
			if g.Type.ID() == arrow.BOOL {
				k++
			}
		}
		return i>>k&1 == 1
	case arrow.TIMESTAMP:
		return time.UnixMicro(int64(i*100 + c)).UTC()
	case arrow.INT32:
		if f.Name == "attempt" {
			return int32(i)
		}
		return int32(i*100 + c)
	case arrow.INT64:
		return int64(i*100 + c)
	case arrow.FLOAT64:
		return float64(i*100 + c)
	}
	return nil
}
