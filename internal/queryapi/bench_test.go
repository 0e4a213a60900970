package queryapi

import (
	"context"
	"database/sql"
	"io"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// BenchmarkQueryAndWrite measures a 100k-row query streamed through the guard and encoded in
// each format (go test -tags duckdb_arrow -bench QueryAndWrite ./internal/queryapi).
func BenchmarkQueryAndWrite(b *testing.B) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	g, err := sqlguard.New(db, sqlguard.Config{MaxRows: 100_000, BytesCap: 1 << 30, MaxBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	const q = `SELECT i AS id, 'study-' || (i % 7) AS study, i * 0.5 AS score,
		TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) SECOND AS at, i % 2 = 0 AS ok
		FROM range(100000) t(i)`
	ctx := context.Background()
	for _, f := range Formats {
		b.Run(string(f), func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				rows, err := g.Stream(ctx, q, sqlguard.Limits{Timeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				cw := &countingWriter{w: io.Discard}
				sum, err := WriteAnswer(cw, f, rows)
				rows.Close()
				if err != nil || sum.Err != nil || sum.Rows != 100_000 {
					b.Fatalf("%d rows, %v %v", sum.Rows, err, sum.Err)
				}
				bytes = cw.n
			}
			b.ReportMetric(100_000*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(bytes), "bytes/answer")
		})
	}
}
