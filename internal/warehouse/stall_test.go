package warehouse_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/prometheus/client_golang/prometheus"
)

// syncBuffer is a log destination safe to read while Ingest writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A consumer that stops delivering without an error (as after a lost quorum and a leader
// change) while the stream grows: the lag shows it, the watchdog recreates the consumer from
// the watermark, and every event is stored exactly once.
func TestStalledConsumerIsReset(t *testing.T) {
	tests := []struct {
		name      string
		stall     func(ctx context.Context, t *testing.T, b *bus.Bus)
		wantReset bool // the watchdog must be what heals it
	}{
		{"paused", func(ctx context.Context, t *testing.T, b *bus.Bus) {
			// A paused consumer answers pull requests with nothing and reports nothing pending.
			if _, err := bustest.JetStream(t, b).PauseConsumer(ctx, events.EventsStream, events.AnalyzerConsumer, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"filter moved away", func(ctx context.Context, t *testing.T, b *bus.Bus) {
			// The consumer goes on answering, with nothing: it no longer selects the events.
			s, err := bustest.JetStream(t, b).Stream(ctx, events.EventsStream)
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Consumer(ctx, events.AnalyzerConsumer)
			if err != nil {
				t.Fatal(err)
			}
			cfg := c.CachedInfo().Config
			cfg.FilterSubject = events.EventsPrefix + ".nobody.nothing.never"
			if _, err := s.UpdateConsumer(ctx, cfg); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"deleted", func(ctx context.Context, t *testing.T, b *bus.Bus) {
			// The client may see the deletion (an error, a plain restart) or not (the watchdog).
			if err := bustest.JetStream(t, b).DeleteConsumer(ctx, events.EventsStream, events.AnalyzerConsumer); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bustest.NewServer(t).Connect(t)
			msgs := testMsgs(t)
			before, after := msgs[:len(msgs)/2], msgs[len(msgs)/2:]
			warehousetest.Publish(t, b, before)
			w := openWH(t, tempDB(t))
			reg := prometheus.NewRegistry()
			reg.MustRegister(w.Collectors()...)
			var logs syncBuffer
			cfg := small()
			cfg.StallTimeout = 1500 * time.Millisecond
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- w.Ingest(ctx, b, cfg) }()
			catchUpWhileRunning(t, w, uint64(len(before)))

			// Resets before the stall (none expected, but a slow machine catching up could
			// see one) do not count as the stall's.
			resetsBefore := w.Stats().Resets
			// The lag is the stream's last sequence minus the watermark, seen before the reset.
			// It is sampled from the stall on, beside the publishing: Publish sends one message
			// at a time, and on a loaded machine can take longer than the stall timeout, so the
			// reset can come before it returns.
			var lagSeen uint64
			stopSampling, sampled := make(chan struct{}), make(chan struct{})
			stopSampler := sync.OnceFunc(func() { close(stopSampling); <-sampled })
			defer stopSampler()
			go func() {
				defer close(sampled)
				for {
					if s := w.Stats(); s.Resets == resetsBefore {
						lagSeen = max(lagSeen, s.Lag)
					}
					select {
					case <-stopSampling:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			tt.stall(warehousetest.Context(t, 5*time.Second), t, b)
			warehousetest.Publish(t, b, after)
			deadline := time.Now().Add(30 * time.Second)
			for w.Stats().Watermark < uint64(len(msgs)) {
				if time.Now().After(deadline) {
					t.Fatalf("watermark %d after 30s, want %d (stats %+v)", w.Stats().Watermark, len(msgs), w.Stats())
				}
				time.Sleep(5 * time.Millisecond)
			}
			stopSampler()
			// Caught up, the lag returns to 0.
			for w.Stats().Lag != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("lag %d after catching up", w.Stats().Lag)
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Ingest() after cancel = %v, want nil", err)
			}
			checkExact(t, w, msgs)

			s := w.Stats()
			resets := gathered(t, reg, "ditto_analyzer_consumer_resets_total")
			if resets != float64(s.Resets) {
				t.Errorf("ditto_analyzer_consumer_resets_total = %v, Stats().Resets = %d", resets, s.Resets)
			}
			if !tt.wantReset {
				t.Logf("resets %d, restarts %d", s.Resets, s.Restarts)
				return
			}
			if s.Resets == resetsBefore || s.Restarts < s.Resets {
				t.Errorf("Stats() = Resets %d, Restarts %d; want a reset, counted in the restarts too", s.Resets, s.Restarts)
			}
			if lagSeen == 0 || lagSeen > uint64(len(after)) {
				t.Errorf("largest lag seen during the stall = %d, want 1..%d", lagSeen, len(after))
			}
			if !strings.Contains(logs.String(), "consumer stalled") {
				t.Errorf("no stall warning logged; logs:\n%s", logs.String())
			}
		})
	}
}

// gathered returns the value of the counter or gauge named name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		m := f.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

// TestQuietThenTrafficIsNoStall: after 20 s without any message (longer than the default
// stall timeout of 15 s), traffic resumes; the first batch is handed over BatchWait after its
// first message, so a watchdog tick always falls between the message's arrival and its
// commit. A watchdog measuring time since the last batch (as it did) called that a stall,
// warned and recreated the consumer; one measuring how long data has been available and not
// consumed does neither.
func TestQuietThenTrafficIsNoStall(t *testing.T) {
	t.Parallel()
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	before, after := msgs[:len(msgs)/2], msgs[len(msgs)/2:]
	warehousetest.Publish(t, b, before)
	w := openWH(t, tempDB(t))
	var logs syncBuffer
	// The default stall timeout; a BatchWait of 1 s makes the watchdog tick every second
	// (min(StallTimeout/4, 1s), at least BatchWait) and the hand-over of a batch take 1 s.
	cfg := warehouse.IngestConfig{BatchWait: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, cfg) }()
	catchUpWhileRunning(t, w, uint64(len(before)))

	quiet := time.NewTimer(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-quiet.C:
			waiting = false
		case <-tick.C:
			if s := w.Stats(); s.Resets != 0 || s.Restarts != 0 {
				t.Fatalf("during the quiet spell: Stats() = Resets %d, Restarts %d; want none", s.Resets, s.Restarts)
			}
		}
	}
	warehousetest.Publish(t, b, after)
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Watermark < uint64(len(msgs)) {
		if time.Now().After(deadline) {
			t.Fatalf("watermark %d after 30s, want %d (stats %+v)", w.Stats().Watermark, len(msgs), w.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Ingest() after cancel = %v, want nil", err)
	}
	checkExact(t, w, msgs)
	if s := w.Stats(); s.Resets != 0 || s.Restarts != 0 {
		t.Errorf("Stats() = Resets %d, Restarts %d after quiet then traffic; want 0, 0", s.Resets, s.Restarts)
	}
	if strings.Contains(logs.String(), "consumer stalled") {
		t.Errorf("a stall warning was logged after quiet then traffic:\n%s", logs.String())
	}
}
