package bus_test

import (
	"context"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// BenchmarkPublish is the client's cost per published event, acknowledgements collected, with
// every publish acknowledged on its own (Publisher) and in fast batches (BatchPublisher), on an
// embedded server in this process (so ns/op counts the server too; allocs/op, the client's
// and the server's, compare the two).
func BenchmarkPublish(b *testing.B) {
	srv := bustest.NewServer(b)
	bs := srv.Connect(b)
	ctx := context.Background()
	e := testEvent(b, "run-1", 1)
	data, err := events.Encode(e)
	if err != nil {
		b.Fatal(err)
	}
	subject, _ := events.SubjectOf(e)
	type publisher interface {
		Publish(ctx context.Context, subject, msgID string, data []byte) error
		Wait(ctx context.Context) error
	}
	for _, tt := range []struct {
		name string
		make func() (publisher, error)
	}{
		{"each", func() (publisher, error) { return bs.NewPublisher(bus.WithMaxInFlight(1024)) }},
		{"batch", func() (publisher, error) {
			return bs.NewBatchPublisher(ctx, events.EventsStream, 10_000, bus.WithMaxInFlight(1024))
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			p, err := tt.make()
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, b.N)
			for i := range ids {
				ids[i] = events.NewID(e.Time)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Publish(ctx, subject, ids[i], data); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
