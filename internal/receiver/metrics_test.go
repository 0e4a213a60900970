package receiver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsHaveGoAndProcessCollectors: the producer's /metrics carries the standard Go runtime
// and process metrics beside its own, as every ditto /metrics does.
func TestMetricsHaveGoAndProcessCollectors(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_open_fds", "ditto_ingest_pending_events"} {
		if !strings.Contains(string(body), "\n"+name+" ") {
			t.Errorf("GET /metrics has no %s", name)
		}
	}
}
