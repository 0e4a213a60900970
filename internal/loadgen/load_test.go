package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// committer stands in for the analyzer: the analyzer's durable consumer, acknowledging each
// fetched batch as the analyzer does after a DuckDB commit.
func committer(ctx context.Context, t *testing.T, b *bus.Bus) {
	t.Helper()
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{MaxAckPending: 30_000}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ctx.Err() == nil {
			batch, err := cons.FetchNoWait(5000)
			if err != nil {
				continue
			}
			var last jetstream.Msg
			for m := range batch.Messages() {
				last = m
			}
			if last != nil {
				_ = last.Ack()
			} else {
				time.Sleep(10 * time.Millisecond) // nothing pending: poll again shortly
			}
		}
	}()
}

// TestRunEndToEnd publishes with per-message acknowledgements and in fast batches (1,000
// events each: several batches and a partial one that the end of publishing commits).
func TestRunEndToEnd(t *testing.T) {
	for _, batch := range []int{0, 1000} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) { runEndToEnd(t, batch) })
	}
}

func runEndToEnd(t *testing.T, batch int) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committer(ctx, t, b)

	const rate, dur = 1500.0, 2 * time.Second
	rep, err := Run(ctx, b, Config{Rate: rate, Duration: dur, Consumer: events.AnalyzerConsumer, Batch: batch,
		Sample: 200 * time.Millisecond, Watch: map[string]int{"test": os.Getpid()}})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if want := min(batch, 1) * rep.Published; rep.Batched != want || rep.BatchStopped != "" {
		t.Errorf("%d of %d acknowledged in batches (stopped: %q), want %d", rep.Batched, rep.Published, rep.BatchStopped, want)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + out.String())
	if rep.Published == 0 || rep.Published > int(rate*dur.Seconds())+1 {
		t.Errorf("published %d, want 1..%d", rep.Published, int(rate*dur.Seconds())+1)
	}
	if !rep.Drained || rep.Stored != rep.Published || rep.Committed != rep.Stored || rep.Failed != 0 {
		t.Errorf("drained %v published %d stored %d committed %d failed %d: want all equal, none failed",
			rep.Drained, rep.Published, rep.Stored, rep.Committed, rep.Failed)
	}
	if len(rep.Samples) == 0 || len(rep.Memory) != 1 || rep.Memory[0].PeakKiB <= 0 {
		t.Errorf("samples %d memory %+v: want samples and the test's peak memory", len(rep.Samples), rep.Memory)
	}
	// The CPU of the watched process (this one: it published) and of the machine, in that order.
	if len(rep.CPU) != 2 || rep.CPU[0].Name != "test" || rep.CPU[1].Name != MachineCPU {
		t.Fatalf("cpu %+v: want the test process's and the machine's", rep.CPU)
	}
	for _, c := range rep.CPU {
		if c.Err != "" || c.Total <= 0 || c.Publishing < 0 || c.Publishing > c.Total || c.PerEvent <= 0 {
			t.Errorf("cpu %+v: want 0 <= publishing <= total, total > 0 (the process published), µs per event > 0", c)
		}
	}
	// The stream holds exactly the study's events, once each.
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	filter, _ := events.StudyEventsSubject(rep.Study)
	if n, err := s.Count(ctx, filter); err != nil || n != uint64(rep.Published) {
		t.Errorf("stream holds %d messages of %s (%v), want %d", n, rep.Study, err, rep.Published)
	}
}

func TestRunNotDrained(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx := context.Background()
	// A consumer that never acknowledges: the analyzer is stuck.
	if _, err := bustest.JetStream(t, b).CreateOrUpdateConsumer(ctx, events.EventsStream, jetstream.ConsumerConfig{
		Durable: "stuck", AckPolicy: jetstream.AckAllPolicy}); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, b, Config{Rate: 200, Duration: 300 * time.Millisecond, Consumer: "stuck",
		DrainTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrNotDrained) {
		t.Fatalf("Run = %v, want ErrNotDrained; report %+v", err, rep)
	}
	if rep == nil || rep.Drained || rep.Sustained() {
		t.Errorf("report %+v: want not drained, not sustained", rep)
	}
}

// A stream that cannot hold the load (here its max bytes, new messages discarded; a full disk
// is refused alike) makes Run fail with the count not stored and the server's reason, and the
// report says why the batches stopped.
func TestRunIntoAFullStream(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bustest.LimitStream(ctx, t, b, events.EventsStream, 200_000)
	rep, err := Run(ctx, b, Config{Rate: 2000, Duration: time.Second, Batch: 500, Sample: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "publishes not acknowledged; the first:") || !strings.Contains(err.Error(), "maximum bytes exceeded") {
		t.Fatalf("Run = %v, want the publishes not acknowledged and the server's reason", err)
	}
	if rep == nil || rep.Failed == 0 || !strings.Contains(rep.BatchStopped, "maximum bytes exceeded") {
		t.Errorf("report %+v: want failed publishes and the batches' stop explained", rep)
	}
	t.Logf("Run = %v; batches: %s", err, rep.BatchStopped)
}
