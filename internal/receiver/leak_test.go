package receiver_test

import (
	"net/http"
	"testing"

	"github.com/dittolab/ditto/internal/leaktest"
	"go.uber.org/goleak"
)

// TestNoGoroutineLeak: a server that handled events and traces and was closed leaves no
// goroutine behind (its flusher, publishers and handlers all end).
func TestNoGoroutineLeak(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { // registered first, so it runs after every other cleanup
		http.DefaultClient.CloseIdleConnections()
		leaktest.VerifyNone(t, ignore)
	})
	e := newEnv(t, nil)
	e.post(t, "/v1/events", tokAll, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "r", 2)))
	e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "split_part1.json"))
	e.post(t, "/v1/traces", tokAll, "application/json", payload(t, "genai.json"))
}
