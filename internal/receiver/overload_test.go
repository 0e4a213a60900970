package receiver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/receiver"
	"github.com/prometheus/client_golang/prometheus"
)

func gauge(t testing.TB, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// gaugeOf is the value of the gauge name's series whose one label is label (0 when it has none).
func gaugeOf(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if lp := m.GetLabel(); len(lp) == 1 && lp[0].GetValue() == label {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func counterSum(t testing.TB, reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestOverloadThrottlesLosesNothing drives far more concurrent events than the server admits
// at once: requests beyond the bound are answered 429/503 with Retry-After, the clients retry,
// every event ends up stored exactly once, and the events in flight never exceed MaxPending.
func TestOverloadThrottlesLosesNothing(t *testing.T) {
	const (
		maxPending = 100
		clients    = 16
		batches    = 10
		perBatch   = 48 // run.started + 23 calls × 2 + run.finished
	)
	e := newEnv(t, func(c *receiver.Config) {
		c.MaxPending, c.MaxEvents, c.MaxConcurrent, c.AdmitWait = maxPending, maxPending, 6, time.Millisecond
	})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // sample the in-flight gauge while the load runs
		defer close(sampled)
		for {
			if v := int64(gauge(t, e.srv.Registry(), "ditto_ingest_pending_events")); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var throttled, retryAfterMissing atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				body := ndjson(t, runEvents(t, "prod", fmt.Sprintf("c%d-b%d", c, b), 23))
				for attempt := 0; ; attempt++ {
					req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/events", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+tokAll)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						break
					}
					if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
						t.Errorf("status %d under load", resp.StatusCode)
						return
					}
					throttled.Add(1)
					if resp.Header.Get("Retry-After") == "" {
						retryAfterMissing.Add(1)
					}
					// A real client waits Retry-After (1s); the test backs off briefly to stay fast.
					time.Sleep(time.Duration(1+attempt%5) * time.Millisecond)
				}
			}
		}(c)
	}
	wg.Wait()
	close(stop)
	<-sampled
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	want := uint64(clients * batches * perBatch)
	if n := streamCount(t, e.bus); n != want {
		t.Errorf("stream holds %d events, want %d: something was lost or duplicated", n, want)
	}
	if throttled.Load() == 0 {
		t.Errorf("no request was throttled: the load did not exceed the bound")
	}
	if retryAfterMissing.Load() > 0 {
		t.Errorf("%d throttled answers without Retry-After", retryAfterMissing.Load())
	}
	if p := peak.Load(); p > maxPending {
		t.Errorf("peak events in flight = %d, above MaxPending %d", p, maxPending)
	}
	if got := counterSum(t, e.srv.Registry(), "ditto_ingest_throttled_total"); got != float64(throttled.Load()) {
		t.Errorf("ditto_ingest_throttled_total = %v, clients saw %d", got, throttled.Load())
	}
	t.Logf("%d events stored; %d throttled answers; peak in flight %d (bound %d); heap in use %d KiB before, %d KiB after",
		want, throttled.Load(), peak.Load(), maxPending, before.HeapInuse>>10, after.HeapInuse>>10)
}

// TestJetStreamDownAnswers503 stops NATS under the server: writes are answered 503 with
// Retry-After, not accepted into an unbounded buffer, and the server keeps answering.
func TestJetStreamDownAnswers503(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) { c.AckTimeout = 300 * time.Millisecond })
	e.nats.Stop()
	resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "r", 1)))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("POST with NATS down = %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	r := decodeRespT(t, body)
	if r.Accepted != 0 || len(r.Rejected) != 4 || r.Rejected[0].Reason != "not_stored" {
		t.Errorf("answer %+v, want 4 events not_stored", r)
	}
	resp, _ = e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "genai.json"))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("OTLP export with NATS down = %d, want 503", resp.StatusCode)
	}
	if resp, err := http.Get(e.ts.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz with NATS down: %v %v", resp, err)
	}
	if resp, err := http.Get(e.ts.URL + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with NATS down: %v %v, want 503", resp, err)
	}
}
