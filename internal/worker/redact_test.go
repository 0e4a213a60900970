package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEchoedKeyIsRedacted: an OpenAI-compatible endpoint that echoes the request's
// Authorization header in its error text (a 400 the client reports with the endpoint's
// message) must not get the API key stored: no stored event holds the key's bytes, and the
// error texts say [redacted] where the key was.
func TestEchoedKeyIsRedacted(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	const key = "sk-live-5f4dcc3b5aa765d61d8327deb882cf99"
	t.Setenv("DITTO_KEY_ECHO", key)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(rw, `{"error":{"message":"malformed request; you sent Authorization: %s","type":"invalid_request_error"}}`,
			r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	p := realEndpointSpec(t, "echo", srv.URL+"/v1", "DITTO_KEY_ECHO", 2)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 2})
	waitFor(t, ctx, "both runs recorded", func() bool { return w.Stats().Acked.Load() == 2 })

	// Every message of the events stream, as stored.
	s, err := e.bus.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Count(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sawRedacted := 0
	err = s.Read(ctx, "", n, func(m jetstream.Msg) error {
		if bytes.Contains(m.Data(), []byte(key)) || bytes.Contains(m.Data(), []byte(key[8:])) {
			t.Errorf("stored event on %s holds the API key:\n%s", m.Subject(), m.Data())
		}
		ev, err := events.Decode(m.Data())
		if err != nil {
			return err
		}
		switch pl := ev.Payload.(type) {
		case events.ModelCalled:
			if strings.Contains(pl.Error, "Bearer "+worker.Redacted) {
				sawRedacted++
			}
		case events.RunFinished:
			if ev.Study == "echo" && pl.Status != events.StatusErrored {
				t.Errorf("run.finished %s, want errored", pl.Status)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without redaction the endpoint's message, key included, is what model.called.error says:
	// the test would see the key above and no [redacted].
	if sawRedacted == 0 {
		t.Errorf("no model.called error says where the key was redacted; the endpoint's message did not reach the events")
	}
}

// TestRedactionKeepsEventsValid: a key holding characters JSON escapes is redacted in its
// escaped form too, and the redacted event is what is folded and stored (it decodes).
func TestRedactionKeepsEventsValid(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	const key = `k"ey\with-quote-and-backslash`
	t.Setenv("DITTO_KEY_ODD", key)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusBadRequest)
		msg := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(r.Header.Get("Authorization"))
		fmt.Fprintf(rw, `{"error":{"message":"you sent %s","type":"invalid_request_error"}}`, msg)
	}))
	t.Cleanup(srv.Close)
	p := realEndpointSpec(t, "odd", srv.URL+"/v1", "DITTO_KEY_ODD", 1)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 1})
	waitFor(t, ctx, "the run recorded", func() bool { return w.Stats().Acked.Load() == 1 })
	evs := e.readStudy(context.Background(), "odd") // fails the test if a stored event does not decode
	saw := false
	for _, ev := range evs {
		raw, err := events.Encode(&ev)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), `with-quote-and-backslash`) {
			t.Errorf("stored %s holds the key: %s", ev.Type, raw)
		}
		if mc, ok := ev.Payload.(events.ModelCalled); ok && strings.Contains(mc.Error, worker.Redacted) {
			saw = true
		}
	}
	if !saw {
		t.Error("no model.called error says [redacted]")
	}
}
