package queryapi

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"sync/atomic"
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

// BenchmarkStream10M streams a 10-million-row SELECT through the HTTP API in each format with
// a row limit of 9 million, and reports the server's memory while it streams: the peak
// resident set (VmHWM-style, sampled) and Go heap above what they were before, against the
// answer's size. Run: go test -tags duckdb_arrow -run '^$' -bench Stream10M -benchtime 1x
// ./internal/queryapi
func BenchmarkStream10M(b *testing.B) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := NewServer(db, Config{Limits: sqlguard.Config{RowsCap: 10_000_000, BytesCap: 1 << 40, MaxBytes: 1 << 40,
		Timeout: 10 * time.Minute, MaxTimeout: 10 * time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	const q = `SELECT i AS id, 'study-' || (i % 7) AS study, i * 0.5 AS score, i % 2 = 0 AS ok FROM range(10000000) t(i)`
	for _, f := range []Format{FormatJSONL, FormatJSON, FormatCSV, FormatArrow, FormatParquet} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				rss0, heap0 := readRSS(), heapInUse()
				var peakRSS, peakHeap atomic.Int64
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for {
						if r := readRSS() - rss0; r > peakRSS.Load() {
							peakRSS.Store(r)
						}
						if h := heapInUse() - heap0; h > peakHeap.Load() {
							peakHeap.Store(h)
						}
						select {
						case <-stop:
							return
						case <-tick.C:
						}
					}
				}()
				start := time.Now()
				resp, err := http.Get(hs.URL + "/v1/sql?" + url.Values{"q": {q}, "format": {string(f)}, "limit": {"9000000"}}.Encode())
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				elapsed := time.Since(start)
				close(stop)
				<-done
				if err != nil || resp.Trailer.Get(HeaderTruncatedBy) != CutRows || resp.Trailer.Get(HeaderRowCount) != "9000000" {
					b.Fatalf("%s: %v; trailers %v, want 9000000 rows truncated by rows", f, err, resp.Trailer)
				}
				b.ReportMetric(float64(n)/1e6, "MB/answer")
				b.ReportMetric(9e6/elapsed.Seconds(), "rows/s")
				b.ReportMetric(float64(n)/1e6/elapsed.Seconds(), "MB/s")
				b.ReportMetric(float64(peakRSS.Load())/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MiB")
			}
		})
	}
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// readRSS returns the process's resident set in bytes (0 where /proc is not there).
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	fmt.Sscan(string(b), &size, &resident)
	return resident * int64(os.Getpagesize())
}
