package bus_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// TestPublishIfLast: a conditional publish is stored only while the last message matching its
// filter is the one expected, and of racing publishes with the same expectation exactly one is
// stored; on a single server and on an R3 stream of a 3-node cluster (which refuses with
// another error code).
func TestPublishIfLast(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		srv := bustest.NewServer(t)
		testPublishIfLast(t, srv.Connect(t))
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a 3-node cluster")
		}
		testPublishIfLast(t, bustest.StartCluster(t).Connect(t, 3))
	})
}

func testPublishIfLast(t *testing.T, b *bus.Bus) {
	ctx := ctxT(t)
	run := "ditto.events.study1.run-1"
	filter := run + ".>"
	publish := func(subject, id string, last uint64) (uint64, error) {
		return b.PublishIfLast(ctx, subject, id, []byte(`{}`), filter, last)
	}

	s1, err := publish(run+".run.started", "a1", 0)
	if err != nil || s1 == 0 {
		t.Fatalf("PublishIfLast on an empty filter, expecting none = %d, %v", s1, err)
	}
	if _, err := publish(run+".run.started", "a2", 0); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("PublishIfLast expecting none after a message = %v, want ErrConflict", err)
	}
	// Another subject of the same run moves the filter's last message on.
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, run+".model.called", "m1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := publish(run+".run.finished", "f1", s1); !errors.Is(err, bus.ErrConflict) {
		t.Fatalf("PublishIfLast expecting %d after a later message = %v, want ErrConflict", s1, err)
	}
	// A message outside the filter does not.
	if err := p.Publish(ctx, "ditto.events.study1.run-2.run.started", "o1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := s1 + 1
	s3, err := publish(run+".run.finished", "f2", s2)
	if err != nil || s3 <= s2 {
		t.Fatalf("PublishIfLast expecting the last message %d = %d, %v", s2, s3, err)
	}

	// Racing claims: exactly one wins.
	const racers = 8
	var wg sync.WaitGroup
	won := make(chan uint64, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := publish(run+".run.started", fmt.Sprintf("race-%d", i), s3)
			switch {
			case err == nil:
				won <- seq
			case !errors.Is(err, bus.ErrConflict):
				t.Errorf("racer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(won)
	if n := len(won); n != 1 {
		t.Errorf("%d of %d racing publishes were stored, want 1", n, racers)
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(ctx, ""); err != nil || n != 5 {
		t.Errorf("stream holds %d messages (%v), want 5 (a1, m1, o1, f2, one racer)", n, err)
	}
}
