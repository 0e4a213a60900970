package analysis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/loadgen"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/metrics"
)

// largeStudy builds a paired study of three conditions with perCell runs each: the baseline
// varies its arguments and outputs widely, the harness conditions hardly.
func largeStudy(study string, perCell int) []events.Envelope {
	return studyOf(study, []string{"baseline", "harness", "harness_sp"}, perCell)
}

// studyOf is largeStudy with its conditions: the first varies as the baseline does, the second
// as the harness, the third as harness_sp.
func studyOf(study string, conds []string, perCell int) []events.Envelope {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &synth{study: study}
	var cells []events.Cell
	for _, c := range conds {
		cells = append(cells, events.Cell{Task: "credit_ecl", Model: "sim-a", Condition: c, Runs: perCell})
	}
	s.define(cells, true)
	for ci, cond := range conds {
		spread := []int{50, 4, 2}[ci]
		for i := 0; i < perCell; i++ {
			v := rng.IntN(spread)
			steps := []step{
				{state: "load", tool: "load_data", args: map[string]any{"path": "loans.csv"}},
				{state: "score", tool: "score", args: map[string]any{"pd": float64(v) / 100}, retry: v == 1},
			}
			if v%3 != 0 {
				steps = append(steps, step{state: "report", tool: "report", args: map[string]any{"format": "json"}})
			}
			status, success := events.StatusSucceeded, true
			if rng.IntN(5) == 0 {
				status, success = events.StatusFailed, false
			}
			s.add(runSpec{cell: CellKey{"credit_ecl", "sim-a", cond}, run: fmt.Sprintf("%s-%06d", cond, i), attempt: 1,
				input: i / 4, seed: i % 4, steps: steps, output: map[string]any{"ecl": v}, status: status, success: success,
				tokens: [2]int64{100 + int64(rng.IntN(50)), 10}, latencyMS: 50 + float64(rng.IntN(400)),
				start: time.Duration(ci*perCell+i) * time.Millisecond})
		}
	}
	return s.envs
}

// BenchmarkCompute times Compute (SQL load and grouping, every cell, every comparison with
// B = 1,000) over a study of 3 × 600 runs ingested through nats-server and the warehouse.
func BenchmarkCompute(b *testing.B) {
	envs := largeStudy("big", 600)
	w := ingest(b, envs)
	ctx := warehousetest.Context(b, 10*time.Minute)
	b.ResetTimer()
	for range b.N {
		rep, err := Compute(ctx, w.DB(), "big", Options{Permutations: 1000, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Comparisons) != 3*8 {
			b.Fatalf("%d comparisons", len(rep.Comparisons))
		}
	}
}

// BenchmarkLoad times the SQL side alone: study, cell accounting, counted runs and the
// signature grouping of their traces, for the same study.
func BenchmarkLoad(b *testing.B) {
	w := ingest(b, largeStudy("big", 600))
	ctx := warehousetest.Context(b, 10*time.Minute)
	b.ResetTimer()
	for range b.N {
		runs := loadBig(ctx, b, w)
		if len(runs) != 3 {
			b.Fatalf("%d cells", len(runs))
		}
	}
}

// BenchmarkComputeLarge times Compute over 3 cells of 10⁵ runs each (B = 1,000). Only 3 × 10
// runs go through nats-server and the warehouse; the rest are copies of their run_folds rows
// under new run ids (ingesting 3 × 10⁵ runs through the bus takes minutes on this machine).
// Few distinct traces per cell, as under a harness.
func BenchmarkComputeLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	w := ingest(b, largeStudy("big", 10))
	ctx := warehousetest.Context(b, 30*time.Minute)
	if _, err := w.DB().ExecContext(ctx, `INSERT INTO run_fold_rows
		SELECT f.* REPLACE (f.run || '-copy-' || CAST(i AS VARCHAR) AS run, f.latency_ms + i % 97 AS latency_ms)
		FROM run_fold_rows f, range(9999) t(i) WHERE f.study = 'big'`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		rep, err := Compute(ctx, w.DB(), "big", Options{Permutations: 1000, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Cells[0].Metrics.N != 100_000 {
			b.Fatalf("N = %d", rep.Cells[0].Metrics.N)
		}
	}
}

// BenchmarkLoadLarge times the SQL side alone (as BenchmarkLoad) over the 3 cells of 10⁵ runs
// of BenchmarkComputeLarge: what reading the projection costs an analysis at scale, without
// the statistics.
func BenchmarkLoadLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	w := ingest(b, largeStudy("big", 10))
	ctx := warehousetest.Context(b, 30*time.Minute)
	if _, err := w.DB().ExecContext(ctx, `INSERT INTO run_fold_rows
		SELECT f.* REPLACE (f.run || '-copy-' || CAST(i AS VARCHAR) AS run, f.latency_ms + i % 97 AS latency_ms)
		FROM run_fold_rows f, range(9999) t(i) WHERE f.study = 'big'`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		runs := loadBig(ctx, b, w)
		if len(runs) != 3 || len(runs[CellKey{"credit_ecl", "sim-a", "harness"}]) != 100_000 {
			b.Fatalf("%d cells", len(runs))
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e9/float64(b.N), "cpu-s/op")
}

// loadBig reads study "big"'s cells and counted runs in one snapshot, as Compute does before
// its statistics.
func loadBig(ctx context.Context, tb testing.TB, w *warehouse.Warehouse) map[CellKey][]metrics.Run {
	q, done, err := Snapshot(ctx, w.DB())
	if err != nil {
		tb.Fatal(err)
	}
	defer done()
	cells, err := loadCells(ctx, q, "big")
	if err != nil {
		tb.Fatal(err)
	}
	var traces int64
	for _, c := range cells {
		traces += c.distinctTraces
	}
	runs, err := loadRuns(ctx, q, selection{study: "big"}, true, traces)
	if err != nil {
		tb.Fatal(err)
	}
	return runs
}

// processCPU is this process's user and system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkComputeMillion times a comparison at scale as a user runs it: Compute (the SQL
// load, both cells' metrics, the comparison's every test with B = 10,000) over a study of two
// cells of 10⁶ runs each, baseline against harness, read from DuckDB. As in
// BenchmarkComputeLarge only 2 × 10 runs go through nats-server and the warehouse; the rest are
// copies of their run_folds rows under new run ids and inputs (each copy keeps its pair). With
// distinct=few every copy keeps its trace (10 distinct traces a cell at most, as under a
// harness); with distinct=many the baseline's copies each get an output of their own (about
// 900,000 distinct traces in the baseline, as an agent without a harness gives), its signatures
// recomputed so that equal contents keep equal signatures. Only the 20 runs ingested have
// events, so the cell accounting's reads of the events table cost what theirs do, less than
// 2 × 10⁶ runs' events would.
//
// Besides the time of one Compute it reports loading alone (the cells and the runs read, the
// statements and their Go side: load-s and load-cpu-s, measured first in a pass of its own;
// load-share, that time over Compute's, which loads again), the process's CPU, and its peak
// RSS during Compute (peak-rss-MiB: the kernel's high-water mark reset just before, so it
// includes what the process held already, rss-before-MiB: the embedded broker and DuckDB's
// cache of the table).
func BenchmarkComputeMillion(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	for _, many := range []bool{false, true} {
		b.Run(fmt.Sprintf("distinct=%s", map[bool]string{false: "few", true: "many"}[many]), func(b *testing.B) {
			w, ctx := millionStudy(b, many)
			t0, c0 := time.Now(), processCPU()
			runs := loadBig(ctx, b, w)
			load, loadCPU := time.Since(t0), processCPU()-c0
			if len(runs) != 2 || len(runs[CellKey{"credit_ecl", "sim-a", "baseline"}]) != perCell {
				b.Fatalf("%d cells", len(runs))
			}
			runs = nil
			runtime.GC()
			debug.FreeOSMemory()
			resetPeakRSS(b)
			before := procMemory(b)
			b.ResetTimer()
			c0 = processCPU()
			var rep *Result
			var err error
			for range b.N {
				if rep, err = Compute(ctx, w.DB(), "big", Options{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
			cpu := processCPU() - c0
			b.StopTimer()
			peak := procMemory(b)
			if n := rep.Cells[0].Metrics.N; n != perCell {
				b.Fatalf("N = %d", n)
			}
			if len(rep.Comparisons) == 0 {
				b.Fatal("no comparisons")
			}
			b.ReportMetric(load.Seconds(), "load-s")
			b.ReportMetric(load.Seconds()/(b.Elapsed().Seconds()/float64(b.N)), "load-share")
			b.ReportMetric(float64(loadCPU)/1e9, "load-cpu-s")
			b.ReportMetric(float64(cpu)/1e9/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak.Peak)/1024, "peak-rss-MiB")
			b.ReportMetric(float64(before.RSS)/1024, "rss-before-MiB")
		})
	}
}

// perCell is the runs of each of millionStudy's two cells.
const perCell = 1_000_000

// millionStudy is BenchmarkComputeMillion's study: two cells of perCell runs, the baseline's
// traces nearly all distinct when many is set.
func millionStudy(b *testing.B, many bool) (*warehouse.Warehouse, context.Context) {
	w := ingest(b, studyOf("big", []string{"baseline", "harness"}, 10))
	ctx := warehousetest.Context(b, 30*time.Minute)
	output := `CASE WHEN $1 AND f.condition = 'baseline'
		THEN '{"copy":' || CAST(t.i AS VARCHAR) || ',"v":' || f.output || '}' ELSE f.output END`
	if _, err := w.DB().ExecContext(ctx, `INSERT INTO run_fold_rows
		SELECT f.* REPLACE (
			f.run || '-copy-' || CAST(t.i AS VARCHAR) AS run,
			f.input_index + 3 * (t.i + 1) AS input_index,
			f.latency_ms + t.i % 97 AS latency_ms,
			`+output+` AS output,
			CASE WHEN $1 AND f.condition = 'baseline' THEN unhex(sha256(`+output+`)) ELSE f.sig_output END AS sig_output,
			CASE WHEN $1 AND f.condition = 'baseline' THEN unhex(sha256(hex(f.sig_trace) || `+output+`)) ELSE f.sig_trace END AS sig_trace)
		FROM run_fold_rows f, range(99999) t(i) WHERE f.study = 'big'`, many); err != nil {
		b.Fatal(err)
	}
	return w, ctx
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its RSS now (Linux: clear_refs 5).
func resetPeakRSS(tb testing.TB) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// procMemory reads this process's RSS and peak RSS.
func procMemory(tb testing.TB) loadgen.ProcMemory {
	m, err := loadgen.ReadProcMemory(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
