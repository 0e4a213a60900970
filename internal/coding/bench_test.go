package coding_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding"
	"github.com/dittolab/ditto/internal/coding/verify"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/tasks"
)

// BenchmarkCodingRun measures whole coding runs of the simulated personas (zero model latency)
// on the coding-small instances, one condition per iteration in turn, and reports the time per
// run at the median and the 95th percentile, verification's share of it, and the share of
// verifications answered by the memo: "fresh" runs every verification's commands, "memo"
// shares a verification memo across the runs as the worker does.
//
//	go test -run '^$' -bench BenchmarkCodingRun -benchtime 16x ./internal/coding/
func BenchmarkCodingRun(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchCodingRuns(b, nil) })
	b.Run("memo", func(b *testing.B) { benchCodingRuns(b, verify.NewMemo()) })
}

func benchCodingRuns(b *testing.B, memo *verify.Memo) {
	client := simClient(b, "sim-steady")
	instances := [][2]string{{"ledger", "rounding"}, {"inventory", "nil-map"}, {"textutil", "rename-slug"}, {"inventory", "reserved-summary"}}
	conds := [][]string{{"circuit_breaker"}, {"circuit_breaker", "distilled_diagnostics", "test_protection"},
		{"bash_only", "circuit_breaker"}, {"bash_only", "circuit_breaker", "distilled_diagnostics", "test_protection"}}
	m := manager(b)
	var runs, verifying []float64
	var verifications, cached int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		in := instances[i%len(instances)]
		cond, _ := condition.New("bench", conds[(i/len(instances))%len(conds)])
		seed := int64(i)
		spec := harness.RunSpec{Task: tasks.CodingTaskName(in[0], in[1]), Condition: cond, Model: "sim-steady", Simulated: true, Seed: &seed}
		rec := &recorder{}
		t0 := time.Now()
		if _, err := coding.Run(context.Background(), spec, client, rec, coding.Env{Workspaces: m, Memo: memo}); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, float64(time.Since(t0).Milliseconds()))
		v := 0.0
		for _, p := range rec.of(events.TypeVerificationRan) {
			vr := p.(events.VerificationRan)
			v += vr.DurationMS
			verifications++
			if vr.Cached {
				cached++
			}
		}
		verifying = append(verifying, v)
	}
	b.StopTimer()
	var total, vtotal float64
	for i := range runs {
		total += runs[i]
		vtotal += verifying[i]
	}
	slices.Sort(runs)
	b.ReportMetric(quantile(runs, 0.5), "p50-ms/run")
	b.ReportMetric(quantile(runs, 0.95), "p95-ms/run")
	b.ReportMetric(vtotal/total, "verification-share")
	b.ReportMetric(float64(verifications)/float64(len(runs)), "verifications/run")
	b.ReportMetric(float64(cached)/float64(max(verifications, 1)), "cached-share")
}

// quantile is the nearest-rank quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
