package warehouse

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFoldedLoad loads the filter of folded attempts from a run_folds of 2,097,152 rows,
// as the ingester does when the runs stored reach 2^21 (about 31 million events of the load's
// 15-event runs), and reports the Go heap's peak above what it was before the load
// (peak-heap-growth-MiB, sampled every millisecond); -benchmem gives the bytes allocated. The
// figures before and after the filter was sized from a count are in docs/benchmarks.md
// (thirty-fourth session).
func BenchmarkFoldedLoad(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, ing := testIngester(b, ctx, IngestConfig{})
	rows := 1 << 21
	if _, err := ing.conn.ExecContext(ctx, fmt.Sprintf(`INSERT INTO run_fold_rows (study, run, attempt, source_kind, source_id,
		status, success, prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
		rejected_tool_calls, validations_failed, escalated, plan, states, tools, calls, output, sig_plan, sig_states,
		sig_tools, sig_calls, sig_output, sig_trace, events, finished_status)
		SELECT 'load-embedded-20000', '01KBX' || lpad(i::VARCHAR, 21, '0'), 1, 'k', 'x', 'ok', true, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, '', '', '', '', '',
			''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, 1, 'ok' FROM range(%d) t(i)`, rows)); err != nil {
		b.Fatal(err)
	}
	var peak float64
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
		if _, err := ing.folded.ensure(ctx, ing.conn); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		close(done)
		if g := float64(top.Load()) - float64(base); g > peak {
			peak = g
		}
		b.StartTimer()
	}
	b.ReportMetric(peak/(1<<20), "peak-heap-growth-MiB")
}
