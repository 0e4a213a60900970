package queryapi

import (
	"context"
	"database/sql"
	"io"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// BenchmarkQueryAndWrite measures a 100k-row query through the guard and its encoding in each
// format (go test -bench . ./internal/queryapi).
func BenchmarkQueryAndWrite(b *testing.B) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	g, err := sqlguard.New(db, sqlguard.Config{MaxRows: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	const q = `SELECT i AS id, 'study-' || (i % 7) AS study, i * 0.5 AS score,
		TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) SECOND AS at, i % 2 = 0 AS ok
		FROM range(100000) t(i)`
	ctx := context.Background()
	b.Run("query", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.Query(ctx, q, sqlguard.Limits{Timeout: time.Minute}); err != nil {
				b.Fatal(err)
			}
		}
	})
	res, err := g.Query(ctx, q, sqlguard.Limits{Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []Format{FormatJSON, FormatCSV, FormatArrow} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				if err := Write(io.Discard, f, res); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.Rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
