package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/assembler"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/receiver"
)

const (
	tokAll  = "test-token-every-study-0001"
	tokProd = "test-token-prod-only-00002"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// env is a test server: an embedded nats-server, a bus, the ingestion server on httptest and
// an assembler (as producer serve runs them).
type env struct {
	nats *bustest.Server
	bus  *bus.Bus
	srv  *receiver.Server
	ts   *httptest.Server
}

// newEnv starts an env whose assembler has the default config but no grace period and the
// mapping's time bucket of the day.
func newEnv(t testing.TB, mutate func(*receiver.Config)) *env {
	return newEnvAsm(t, mutate, nil)
}

// newServerEnv starts an env without an assembler: the receiver alone (benchmarks of the
// transports).
func newServerEnv(t testing.TB, mutate func(*receiver.Config)) *env {
	t.Helper()
	ns := bustest.NewServer(t)
	e := &env{nats: ns, bus: ns.Connect(t)}
	e.start(t, mutate)
	return e
}

// newEnvAsm starts an env whose assembler config is changed by amutate (when not nil).
func newEnvAsm(t testing.TB, mutate func(*receiver.Config), amutate func(*assembler.Config)) *env {
	t.Helper()
	ns := bustest.NewServer(t)
	e := &env{nats: ns, bus: ns.Connect(t)}
	e.start(t, mutate)
	e.assemble(t, amutate)
	return e
}

// assemble runs an assembler on the env's bus until the test ends.
func (e *env) assemble(t testing.TB, amutate func(*assembler.Config)) {
	t.Helper()
	var cfg assembler.Config
	if amutate != nil {
		amutate(&cfg)
	}
	a, err := assembler.New(e.bus, cfg, nil)
	if err != nil {
		t.Fatalf("assembler.New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// start (re)starts the ingestion server on the env's bus.
func (e *env) start(t testing.TB, mutate func(*receiver.Config)) {
	t.Helper()
	cfg := receiver.Config{Tokens: []receiver.Token{
		{Name: "all", Secret: tokAll, Studies: []string{"*"}},
		{Name: "prod", Secret: tokProd, Studies: []string{"prod"}},
	}}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := receiver.New(e.bus, cfg, nil)
	if err != nil {
		t.Fatalf("ingest.New() = %v", err)
	}
	e.srv = srv
	e.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		e.ts.Close()
		_ = srv.Close(context.Background())
	})
}

// post sends body to path with a bearer token ("" for none).
func (e *env) post(t testing.TB, path, token, contentType string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// stored returns every event in DITTO_EVENTS, decoded.
func stored(t testing.TB, b *bus.Bus) []events.Envelope {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]events.Envelope, 0, info.State.Msgs)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.Msg(ctx, seq)
		if err != nil {
			t.Fatalf("GetMsg(%d) = %v", seq, err)
		}
		e, err := events.Decode(m.Data)
		if err != nil {
			t.Fatalf("stored event %d does not decode: %v", seq, err)
		}
		out = append(out, e)
	}
	return out
}

func streamCount(t testing.TB, b *bus.Bus) uint64 {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// spanRecords returns how many records DITTO_SPANS holds.
func spanRecords(t testing.TB, b *bus.Bus) uint64 {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	s, err := b.Stream(ctx, events.SpansStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// folds groups events by (study, run), orders each run by seq and folds it.
func folds(t testing.TB, evs []events.Envelope) map[string]*events.Run {
	t.Helper()
	byRun := map[string][]events.Envelope{}
	for _, e := range evs {
		k := e.Study + "/" + e.Run
		byRun[k] = append(byRun[k], e)
	}
	out := map[string]*events.Run{}
	for k, h := range byRun {
		slices.SortFunc(h, func(a, b events.Envelope) int { return int(a.Seq - b.Seq) })
		r, err := events.Fold(h)
		if err != nil {
			t.Fatalf("Fold(%s) = %v", k, err)
		}
		out[k] = r
	}
	return out
}

// waitFinished polls the stream until n runs have finished, or fails at the deadline.
func waitFinished(t testing.TB, b *bus.Bus, n int) map[string]*events.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := stored(t, b)
		finished := 0
		for _, e := range evs {
			if e.Type == events.TypeRunFinished {
				finished++
			}
		}
		if finished >= n {
			return folds(t, evs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs finished in the stream after 20s, want %d", finished, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runEvents builds a well-formed run of n tool calls in study/run.
func runEvents(t testing.TB, study, run string, n int) []events.Envelope {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var out []events.Envelope
	seq := int64(0)
	add := func(p events.Payload) {
		seq++
		e := events.New(study, run, t0.Add(time.Duration(seq)*time.Millisecond), p)
		e.Seq = seq
		e.Source = events.Source{Kind: events.SourceProduction, ID: "test-agent"}
		out = append(out, e)
	}
	add(events.RunStarted{Task: "t", Model: "m", Condition: "c", Components: []string{}})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("call-%d", i)
		add(events.ToolCalled{CallID: id, Tool: "lookup", Args: events.MustCanonical(map[string]any{"i": i})})
		add(events.ToolReturned{CallID: id, Tool: "lookup", OK: true, Output: events.MustCanonical(i)})
	}
	add(events.RunFinished{Status: events.StatusSucceeded, Success: true, Totals: events.Totals{ToolCalls: n}})
	return out
}

func ndjson(t testing.TB, evs []events.Envelope) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i := range evs {
		b, err := events.Encode(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
