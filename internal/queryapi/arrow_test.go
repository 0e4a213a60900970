package queryapi

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// TestArrowAllTypes writes one row of every common DuckDB type (and a row of NULLs) as Arrow
// IPC and reads it back with arrow-go's reader.
func TestArrowAllTypes(t *testing.T) {
	db, _ := newTestDB(t)
	g, err := sqlguard.New(db, sqlguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const q = `SELECT * FROM (VALUES
		(true, 1::TINYINT, 2::SMALLINT, 3::INTEGER, 4::BIGINT, 5::UTINYINT, 6::USMALLINT, 7::UINTEGER,
		 8::UBIGINT, 9::HUGEINT, 1.5::FLOAT, 2.5::DOUBLE, 12.34::DECIMAL(6,2), 'x'::VARCHAR, '\x01\x02'::BLOB,
		 DATE '2026-03-04', TIME '05:06:07.5', TIMESTAMP '2026-03-04 05:06:07.123456',
		 TIMESTAMP_NS '2026-03-04 05:06:07.123456789', TIMESTAMPTZ '2026-03-04 05:06:07+00',
		 INTERVAL '1 month 2 days 3 seconds', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID,
		 [1, 2], {'a': 1}, MAP {'k': 1}, '{"j": 1}'::JSON),
		(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
	) AS t(b, i8, i16, i32, i64, u8, u16, u32, u64, h, f32, f64, dec, s, blob, d, tm, ts, tsns, tstz, iv, u, l, st, m, j)`
	res, err := g.Query(context.Background(), q, sqlguard.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteArrow(&buf, res); err != nil {
		t.Fatal(err)
	}
	rd, err := ipc.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	if !rd.Next() {
		t.Fatalf("no record: %v", rd.Err())
	}
	rec := rd.RecordBatch()
	if rec.NumRows() != 2 || rec.NumCols() != 26 {
		t.Fatalf("record %d×%d, want 2×26", rec.NumRows(), rec.NumCols())
	}
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s", name)
		}
		return rec.Column(idx[0])
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"u64", col("u64").(*array.Uint64).Value(0), uint64(8)},
		{"h", col("h").(*array.Decimal128).Value(0).ToString(0), "9"},
		{"dec", col("dec").(*array.Decimal128).Value(0).ToString(2), "12.34"},
		{"blob", string(col("blob").(*array.Binary).Value(0)), "\x01\x02"},
		{"tm", col("tm").(*array.Time64).Value(0), arrow.Time64(5*3600e6 + 6*60e6 + 7.5e6)},
		{"tsns", col("tsns").(*array.Timestamp).Value(0).ToTime(arrow.Nanosecond).Nanosecond(), 123456789},
		{"iv", col("iv").(*array.MonthDayNanoInterval).Value(0), arrow.MonthDayNanoInterval{Months: 1, Days: 2, Nanoseconds: 3e9}},
		{"u", col("u").(*array.String).Value(0), "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		{"l", col("l").(*array.String).Value(0), "[1,2]"},
		{"st", col("st").(*array.String).Value(0), `{"a":1}`},
		{"m", col("m").(*array.String).Value(0), `[{"key":"k","value":1}]`},
		{"j", col("j").(*array.String).Value(0), `{"j":1}`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for i := 0; i < int(rec.NumCols()); i++ {
		if !rec.Column(i).IsNull(1) {
			t.Errorf("column %s row 2 is not null", rec.Schema().Field(i).Name)
		}
	}
}
