package warehouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestBrokerRestartMidIngest: the ingest consumer keeps its state in the broker's memory (the
// reader's position is in DuckDB), so a broker that restarts comes back without it. Ingestion
// running through the restart must make the consumer again from the watermark and store every
// event once, the ones published before the restart and after it, without waiting for the stall
// watchdog (set out of reach here) or the client's missed heartbeats.
func TestBrokerRestartMidIngest(t *testing.T) {
	port, dir := bustest.FreePort(t), t.TempDir()
	srv := bustest.StartOnPort(t, port, dir)
	b := srv.Connect(t)
	msgs := testMsgs(t)
	half := len(msgs) / 2
	warehousetest.PublishFast(t, b, msgs[:half])

	w := openWH(t, tempDB(t))
	cfg := small()
	cfg.StallTimeout = 10 * time.Minute
	ctx, cancel := context.WithCancel(warehousetest.Context(t, 3*time.Minute))
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Ingest() = %v", err)
		}
	}()
	waitStored := func(n int, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for w.Stats().Events < uint64(n) {
			if time.Since(start) > within {
				t.Fatalf("%d events stored after %v, want %d", w.Stats().Events, within, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitStored(half, time.Minute)

	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if ci, err := s.ConsumerInfo(ctx, events.AnalyzerConsumer); err != nil || !ci.Config.MemoryStorage {
		t.Fatalf("the ingest consumer: %+v, %v; want its state in memory", ci, err)
	}

	srv.Stop()
	bustest.StartOnPort(t, port, dir)
	warehousetest.PublishFast(t, b, msgs[half:])
	// Within 20 s: without ending the session on the unanswered pull, the client noticed
	// nothing until its missed heartbeats, 30 s later.
	took := waitStored(len(msgs), 20*time.Second)
	restarts := w.Stats().Restarts
	t.Logf("every event stored %v after the restart's publishes; consumer sessions restarted %d times", took.Round(time.Millisecond), restarts)
	if restarts == 0 {
		t.Error("Stats().Restarts = 0: the consumer session that lost its consumer did not end with an error")
	}
	checkExact(t, w, msgs)
}
