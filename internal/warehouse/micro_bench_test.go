package warehouse_test

import (
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse"
)

// BenchmarkDecode is the fetcher's CPU per event: decode and validate (keeping the payload's bytes), and
// build the Arrow record.
func BenchmarkDecode(b *testing.B) {
	msgs := benchMsgs(b, 10000)
	subjects := make([]string, len(msgs))
	raws := make([][]byte, len(msgs))
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if n := warehouse.DecodeForBench(subjects, raws); n != len(msgs) {
			b.Fatalf("decoded %d of %d", n, len(msgs))
		}
	}
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/1000/float64(b.N*len(msgs)), "cpu-µs/event")
}

// BenchmarkFold is the committer's CPU per finished run folded from memory.
func BenchmarkFold(b *testing.B) {
	s := newSynth(b, "fold")
	s.run("r", 1, runOpts{condition: "harness", retry: true})
	var h []events.Envelope
	for _, m := range s.out {
		e, _ := events.Decode(m.Data)
		h = append(h, e)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		warehouse.FoldForBench(h)
	}
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/1000/float64(b.N*len(h)), "cpu-µs/event")
}
