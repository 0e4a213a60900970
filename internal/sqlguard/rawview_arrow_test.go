//go:build duckdb_arrow

package sqlguard

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dittolab/ditto/internal/duckconn"
	"github.com/duckdb/duckdb-go/v2"
)

// TestRawViewRefused: a view registered over an Arrow stream (what the ingester's ingest_batch
// and ingest_folds are) is refused by name, before DuckDB binds it: once the stream is freed,
// binding the view crashes the process.
func TestRawViewRefused(t *testing.T) {
	f := newFixture(t, true)
	ctx := context.Background()
	conn, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var release func()
	if err := conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(duckconn.Driver(dc))
		if err != nil {
			return err
		}
		release, err = a.RegisterView(rdr, "Feed")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, q := range []string{"SELECT * FROM feed", "SELECT * FROM main.FEED", "SELECT count(*) FROM runs, (SELECT * FROM feed)"} {
		_, err := f.guard.Query(ctx, q, Limits{})
		var re *RefusedError
		if !errors.As(err, &re) || re.Kind != KindFunction || re.Name == "" {
			t.Errorf("Query(%q) = %v, want a refusal of the raw view", q, err)
		}
	}
	// A view with its SQL text, and a table, still pass.
	for _, q := range []string{"SELECT * FROM finished", "SELECT * FROM runs"} {
		if _, err := f.guard.Query(ctx, q, Limits{}); err != nil {
			t.Errorf("Query(%q) = %v, want it run", q, err)
		}
	}
}
