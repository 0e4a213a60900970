package loadgen

import (
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
)

// BenchmarkGenerateEncode is the generator's own cost per event (make and encode), which
// bounds the rate one `producer load` process can offer.
func BenchmarkGenerateEncode(b *testing.B) {
	g := newRuns("bench", 1)
	var queue []*events.Envelope
	t0 := time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if len(queue) == 0 {
			queue = g.next(t0)
		}
		if _, err := events.Encode(queue[0]); err != nil {
			b.Fatal(err)
		}
		queue = queue[1:]
	}
}
