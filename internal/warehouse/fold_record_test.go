package warehouse

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestBuildFoldsRefusesAWrongType checks that a value its column cannot hold is an error
// naming the column, and a row of the wrong length an error, rather than a wrong row.
func TestBuildFoldsRefusesAWrongType(t *testing.T) {
	row := make(foldRow, foldsSchema.NumFields())
	row[0], row[1], row[2] = "s", "r", int32(1)
	row[17] = time.Unix(0, 0)
	rec, err := buildFolds(memory.DefaultAllocator, []foldRow{row})
	if err != nil {
		t.Fatalf("a row of nulls and right types: %v", err)
	}
	rec.Release()
	row[2] = int64(1) // attempt is INTEGER
	if _, err := buildFolds(memory.DefaultAllocator, []foldRow{row}); err == nil || !strings.Contains(err.Error(), "column attempt") {
		t.Errorf("an int64 attempt: err = %v, want one naming column attempt", err)
	}
	if _, err := buildFolds(memory.DefaultAllocator, []foldRow{row[:3]}); err == nil {
		t.Error("a row of 3 values: no error")
	}
}
