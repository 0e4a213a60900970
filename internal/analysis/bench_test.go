package analysis

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// largeStudy builds a paired study of three conditions with perCell runs each: the baseline
// varies its arguments and outputs widely, the harness conditions hardly.
func largeStudy(study string, perCell int) []events.Envelope {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &synth{study: study}
	conds := []string{"baseline", "harness", "harness_sp"}
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
		tx, err := w.DB().BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		q := SQLQuerier(tx)
		if _, err := loadCells(ctx, q, "big"); err != nil {
			b.Fatal(err)
		}
		runs, err := loadRuns(ctx, q, selection{study: "big"}, true)
		if err != nil {
			b.Fatal(err)
		}
		_ = tx.Rollback()
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
		tx, err := w.DB().BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		q := SQLQuerier(tx)
		if _, err := loadCells(ctx, q, "big"); err != nil {
			b.Fatal(err)
		}
		runs, err := loadRuns(ctx, q, selection{study: "big"}, true)
		if err != nil {
			b.Fatal(err)
		}
		_ = tx.Rollback()
		if len(runs) != 3 || len(runs[CellKey{"credit_ecl", "sim-a", "harness"}]) != 100_000 {
			b.Fatalf("%d cells", len(runs))
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/1e9/float64(b.N), "cpu-s/op")
}

// processCPU is this process's user and system CPU time in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
