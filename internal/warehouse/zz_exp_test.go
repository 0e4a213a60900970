package warehouse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dittolab/ditto/queries"
)

func BenchmarkZZExp(b *testing.B) {
	const n = 200_000
	items := loadItems(b, n)
	variants := strings.Split(os.Getenv("EXP_VARIANTS"), ",")
	for rep := 0; rep < 2; rep++ {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/%d", v, rep), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "load.duckdb")
				ctx := context.Background()
				cfg := Config{Path: path}
				batch := 10_000
				var sets []string
				for _, kv := range strings.Split(v, "+") {
					switch {
					case kv == "t1":
						cfg.Threads = 1
					case kv == "nopio":
						sets = append(sets, "SET preserve_insertion_order=false")
					case strings.HasPrefix(kv, "b"):
						fmt.Sscan(kv[1:], &batch)
					case strings.HasPrefix(kv, "ck"):
						cfg.CheckpointThreshold = kv[2:]
					}
				}
				w, err := Open(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				conn, _ := w.db.Conn(ctx)
				for _, q := range sets {
					if _, err := conn.ExecContext(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
				recs := make([]arrow.RecordBatch, 0, n/batch)
				for off := 0; off < n; off += batch {
					recs = append(recs, buildRecord(memory.DefaultAllocator, items[off:off+batch]))
				}
				start, cpu0 := time.Now(), cpuNow()
				for i, rec := range recs {
					conn.ExecContext(ctx, "BEGIN TRANSACTION")
					if err := loadEvents(ctx, conn, rec); err != nil {
						b.Fatal(err)
					}
					conn.ExecContext(ctx, queries.IngestWatermarkSet.SQL, "S", int64(i), int64(batch), int64(0), int64(0))
					if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
				b.ReportMetric(float64((cpuNow()-cpu0).Microseconds())/float64(n), "cpu-µs/row")
				conn.Close()
				w.Close()
			})
		}
	}
}
