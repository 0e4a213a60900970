package metrics

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Benchmarks for `make bench` (metrics part):
//
//	go test -run '^$' -bench . -benchtime 1x ./metrics/
//
// BenchmarkComputeCell reports, besides ns/op, the process CPU time per op
// (cpu-ms/op: user + system, GC included; steadier than wall time on a
// shared machine), the peak live heap during
// the computation (peak-heap-MiB, input included), the input's own heap
// (input-MiB), and the bytes allocated per op (alloc-MiB).
// BenchmarkAllPairsSpeedup times the all-pairs reference against
// ComputeCell at N = 2000 and reports the ratio.

// peakHeap samples the live heap every millisecond until stopped.
type peakHeap struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startPeak() *peakHeap {
	p := &peakHeap{stop: make(chan struct{}), peak: heapObjects()}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.peak = max(p.peak, heapObjects())
			}
		}
	}()
	return p
}

func (p *peakHeap) done() uint64 {
	close(p.stop)
	p.wg.Wait()
	return max(p.peak, heapObjects())
}

const mib = 1 << 20

func BenchmarkComputeCell(b *testing.B) {
	for _, s := range []shape{shapeFew, shapeDistinct, shapeAdversarial} {
		for _, n := range []int{10_000, 100_000, 1_000_000} {
			b.Run(fmt.Sprintf("shape=%v/N=%d", s, n), func(b *testing.B) {
				runs := genRuns(n, s, 1)
				runtime.GC()
				input := heapObjects()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				p := startPeak()
				b.ResetTimer()
				c0 := cpuTime()
				var m CellMetrics
				for i := 0; i < b.N; i++ {
					var err error
					if m, err = ComputeCell(runs, Options{}); err != nil {
						b.Fatal(err)
					}
				}
				cpu := cpuTime() - c0
				b.StopTimer()
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
				peak := p.done()
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(peak)/mib, "peak-heap-MiB")
				b.ReportMetric(float64(input)/mib, "input-MiB")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/mib, "alloc-MiB/op")
				b.ReportMetric(boolF(m.TSS.Estimated), "tss-sampled")
				b.ReportMetric(boolF(m.AC.Estimated), "ac-sampled")
				runtime.KeepAlive(runs)
			})
		}
	}
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// BenchmarkAllPairsSpeedup runs the all-pairs reference once per op and
// ComputeCell on the same cell, and reports their ratio in wall time and
// in process CPU time (user + system; steadier on a shared machine). The
// results are checked equal in TestComputeCellMatchesAllPairs.
func BenchmarkAllPairsSpeedup(b *testing.B) {
	for _, s := range []shape{shapeFew, shapeDistinct, shapeAdversarial} {
		b.Run(fmt.Sprintf("shape=%v/N=2000", s), func(b *testing.B) {
			runs := genRuns(2000, s, 1)
			var ref, fast, refCPU, fastCPU time.Duration
			const reps = 20 // ComputeCell is fast enough that one call is noise
			for i := 0; i < b.N; i++ {
				t0, c0 := time.Now(), cpuTime()
				allPairs(runs)
				ref += time.Since(t0)
				refCPU += cpuTime() - c0
				t0, c0 = time.Now(), cpuTime()
				for j := 0; j < reps; j++ {
					if _, err := ComputeCell(runs, Options{}); err != nil {
						b.Fatal(err)
					}
				}
				fast += time.Since(t0) / reps
				fastCPU += (cpuTime() - c0) / reps
			}
			n := float64(b.N)
			b.ReportMetric(float64(ref.Microseconds())/1000/n, "allpairs-ms")
			b.ReportMetric(float64(fast.Microseconds())/1000/n, "grouped-ms")
			b.ReportMetric(float64(ref)/float64(fast), "speedup-x")
			b.ReportMetric(float64(refCPU.Microseconds())/1000/n, "allpairs-cpu-ms")
			b.ReportMetric(float64(fastCPU.Microseconds())/1000/n, "grouped-cpu-ms")
			b.ReportMetric(float64(refCPU)/float64(fastCPU), "cpu-speedup-x")
		})
	}
}

// cpuTime returns the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompare times one Compare call (every test, B = 10,000
// permutations) for two cells of n runs each: a harnessed cell against a
// baseline cell. Besides wall and CPU time per op it reports the peak live
// heap during the call (peak-heap-MiB, both cells' runs included, garbage
// not yet collected too), the cells' own heap (input-MiB), the bytes the
// call allocates (alloc-MiB/op: with the input, a bound on its memory
// whatever the collector does), and how many permutation tests were drawn
// by counts or made asymptotic.
func BenchmarkCompare(b *testing.B) {
	for _, n := range []int{100, 1000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			base := genRuns(n, shapeDistinct, 1)
			harn := genRuns(n, shapeFew, 2)
			runtime.GC()
			input := heapObjects()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			p := startPeak()
			b.ResetTimer()
			c0 := cpuTime()
			var cs []Comparison
			for i := 0; i < b.N; i++ {
				var err error
				if cs, err = Compare(base, harn, CompareConfig{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-c0).Milliseconds())/float64(b.N), "cpu-ms/op")
			b.StopTimer()
			b.ReportMetric(float64(p.done())/mib, "peak-heap-MiB")
			b.ReportMetric(float64(input)/mib, "input-MiB")
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/mib, "alloc-MiB/op")
			var counts, asym float64
			for _, c := range cs {
				if c.Test == TestPermutation {
					switch c.Method {
					case MethodCounts:
						counts++
					case MethodAsymptotic:
						asym++
					}
				}
			}
			b.ReportMetric(counts, "perm-by-counts")
			b.ReportMetric(asym, "perm-asymptotic")
			runtime.KeepAlive(base)
			runtime.KeepAlive(harn)
		})
	}
}
