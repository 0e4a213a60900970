package warehouse

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFoldedLoad loads the filter of folded attempts from a run_folds of 2,097,152 rows,
// as the ingester does when it starts on a database of 2^21 runs (about 31 million events of the
// load's 15-event runs; until the thirty-fifth session, also when the runs stored reached it),
// and reports the Go heap's peak above what it was before the load
// (peak-heap-growth-MiB, sampled every millisecond) and the filter's levels (filter-MiB: outside
// the Go heap since the thirty-sixth session, where the OS maps memory, so no longer in the
// peak); -benchmem gives the bytes allocated. The figures before and after the filter was sized
// from a count are in docs/benchmarks.md (thirty-fourth session).
func BenchmarkFoldedLoad(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, ing := testIngester(b, ctx, IngestConfig{})
	const rows = 1 << 21
	insertFoldRows(b, ctx, ing.conn, rows, "'load-embedded-20000'", "'01KBX' || lpad(i::VARCHAR, 21, '0')", "1")
	var peak, filter float64
	for b.Loop() {
		b.StopTimer()
		ing.folded = foldedFilter{}
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		base := sample[0].Value.Uint64()
		var top atomic.Uint64
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			for {
				select {
				case <-done:
					return
				case <-t.C:
					metrics.Read(s)
					if v := s[0].Value.Uint64(); v > top.Load() {
						top.Store(v)
					}
				}
			}
		}()
		b.StartTimer()
		_, err := ing.folded.ensure(ctx, ing.conn)
		b.StopTimer()
		close(done)
		if err != nil {
			b.Fatal(err)
		}
		if g := float64(top.Load()) - float64(base); g > peak {
			peak = g
		}
		filter = 0
		for _, l := range ing.folded.levels {
			filter += float64(len(l.bits.w) * 8)
		}
		b.StartTimer()
	}
	b.ReportMetric(peak/(1<<20), "peak-heap-growth-MiB")
	b.ReportMetric(filter/(1<<20), "filter-MiB")
}
