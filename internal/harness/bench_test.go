package harness_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// gapModel answers like the ideal agent at zero latency and measures the harness's own time per
// step: from the return of one model call (or the start of the run) to the next call (or the
// end of the run). Its own work (reading the conversation, Task.Ideal) is excluded.
type gapModel struct {
	turn harnesstest.Turn
	last time.Time
	gaps []time.Duration
}

func (m *gapModel) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	m.gaps = append(m.gaps, time.Since(m.last))
	resp, err := m.turn(req)
	resp.Usage = llm.Usage{PromptTokens: 100, CompletionTokens: 10}
	m.last = time.Now()
	return resp, err
}

// report reports the steps of b's runs, which took elapsed: the p50 and p99 of the gaps, runs
// per second and steps per run.
func (m *gapModel) report(b *testing.B, elapsed time.Duration) {
	slices.Sort(m.gaps)
	q := func(p float64) float64 { return float64(m.gaps[int(p*float64(len(m.gaps)-1))].Nanoseconds()) }
	b.ReportMetric(q(0.50), "p50-ns/step")
	b.ReportMetric(q(0.99), "p99-ns/step")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(len(m.gaps))/float64(b.N), "steps/run")
}

// BenchmarkStep reports the harness overhead per step (gates, tool execution over fixtures,
// validation, event envelopes with validation, JSON encoding and the events fold, i.e. all but
// the network publish) with a zero-latency model, p50 and p99, and runs per second.
func BenchmarkStep(b *testing.B) {
	for _, tc := range []struct {
		task, cond string
		pipeline   bool // envelopes, validation, encoding and fold, or a no-op emitter
	}{
		{"credit_ecl", "harness_sp", false}, {"credit_ecl", "harness_sp", true},
		{"credit_ecl", "baseline", false}, {"credit_ecl", "baseline", true},
		{"aml_screening", "harness_sp", false}, {"aml_screening", "harness_sp", true},
		{"renal_dosing", "harness", false}, {"renal_dosing", "harness", true},
	} {
		name := tc.task + "/" + tc.cond + "/harness-only"
		if tc.pipeline {
			name = tc.task + "/" + tc.cond + "/with-events"
		}
		b.Run(name, func(b *testing.B) {
			task, _ := tasks.Get(tc.task)
			c, _ := condition.Parse(tc.cond)
			seed := int64(1)
			m := &gapModel{turn: harnesstest.Ideal(task)}
			var fold *events.Run
			var encoded int
			em := &harness.Sequencer{Study: "bench", Run: "r", Attempt: 1, Source: events.Source{Kind: events.SourceHarness, ID: "bench"},
				Now: time.Now,
				Publish: func(_ context.Context, e *events.Envelope) error {
					raw, err := events.Encode(e)
					if err != nil {
						return err
					}
					encoded += len(raw)
					return fold.Apply(e)
				}}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				fold = &events.Run{}
				*em = harness.Sequencer{Study: em.Study, Run: em.Run, Attempt: 1, Source: em.Source, Now: em.Now, Publish: em.Publish}
				s := harness.RunSpec{Task: tc.task, Instance: i % len(task.Instances), Condition: c, Model: "bench", Seed: &seed}
				m.last = time.Now()
				var e harness.Emitter = em
				if !tc.pipeline {
					e = harness.EmitterFunc(func(context.Context, events.Payload) error { return nil })
				}
				res, err := harness.Run(context.Background(), s, m, e)
				m.gaps = append(m.gaps, time.Since(m.last))
				if err != nil || !res.Success {
					b.Fatalf("run %d: %v %s %s", i, err, res.Status, res.Error)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			m.report(b, elapsed)
			b.ReportMetric(float64(encoded)/float64(b.N), "event-bytes/run")
		})
	}
}
