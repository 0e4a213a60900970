package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/otlpmap"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the ingestion server. Create it with New, serve Handler (or call Serve), and
// Close it to stop the background flusher and emit the traces still buffered.
type Server struct {
	cfg  Config
	bus  *bus.Bus
	auth *authenticator
	gate *gate
	conc chan struct{}
	m    *metrics
	log  *slog.Logger
	mux  *http.ServeMux
	now  func() time.Time

	mu  sync.Mutex // guards asm
	asm *otlpmap.Assembler

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a server publishing to b, and starts its background flusher (traces past their
// grace period or idle timeout). log may be nil.
func New(b *bus.Bus, cfg Config, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	tokens := cfg.Tokens
	if cfg.AuthFile != "" {
		fromFile, err := LoadAuthFile(cfg.AuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(append([]Token(nil), tokens...), fromFile...)
	}
	auth, err := newAuthenticator(tokens, cfg.InsecureNoAuth)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg: cfg, bus: b, auth: auth, gate: newGate(cfg.MaxPending), conc: make(chan struct{}, cfg.MaxConcurrent),
		log: log, now: time.Now, asm: otlpmap.NewAssembler(cfg.Assembly),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.m = newMetrics(
		func() float64 { return float64(s.gate.inUse()) },
		func() float64 { s.mu.Lock(); defer s.mu.Unlock(); _, n := s.asm.Stats(); return float64(n) },
		func() float64 { s.mu.Lock(); defer s.mu.Unlock(); n, _ := s.asm.Stats(); return float64(n) },
	)
	s.mux = http.NewServeMux()
	s.mux.Handle("POST /v1/events", s.instrument("events", s.handleEvents))
	s.mux.Handle("POST /v1/traces", s.instrument("traces", s.handleTraces))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.Connected() {
			http.Error(w, "NATS not connected", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	go s.flusher()
	return s, nil
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Registry returns the Prometheus registry of the server's metrics.
func (s *Server) Registry() *prometheus.Registry { return s.m.reg }

// Serve serves on ln until ctx ends, then shuts down gracefully (in-flight requests finish,
// buffered traces are emitted) within the given grace.
func (s *Server) Serve(ctx context.Context, ln net.Listener, shutdownGrace time.Duration) error {
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      2*s.cfg.AckTimeout + 60*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		_ = s.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if cerr := s.Close(sctx); err == nil {
		err = cerr
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// Close stops the flusher and emits every trace still buffered (complete or not: a trace
// whose root never came becomes an aborted run rather than being lost). It is idempotent.
func (s *Server) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		traces := s.asm.Drain()
		s.mu.Unlock()
		if failed := s.emit(ctx, traces, s.cfg.AckTimeout); len(failed) > 0 {
			err = fmt.Errorf("%w: %d buffered trace(s) not stored at shutdown", ErrNotStored, len(failed))
		}
	})
	return err
}

func (s *Server) flusher() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		due := s.asm.Due(s.now())
		s.mu.Unlock()
		if len(due) == 0 {
			continue
		}
		if failed := s.emit(context.Background(), due, s.cfg.FlushInterval); len(failed) > 0 {
			s.restore(failed)
		}
	}
}

func (s *Server) restore(traces []otlpmap.Trace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, t := range traces {
		s.asm.Restore(t, now)
	}
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// instrument counts requests and their duration and bounds the requests processed at once.
func (s *Server) instrument(endpoint string, h func(http.ResponseWriter, *http.Request) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		select {
		case s.conc <- struct{}{}:
			defer func() { <-s.conc }()
			h(rec, r)
		default:
			// Too many requests at once: refuse before reading the body, so that memory stays
			// bounded by MaxConcurrent bodies.
			s.throttle(rec, endpoint, http.StatusTooManyRequests)
			http.Error(rec, "ingest: too many concurrent requests; retry later", http.StatusTooManyRequests)
		}
		s.m.requests.WithLabelValues(endpoint, strconv.Itoa(rec.code)).Inc()
		s.m.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	})
}

// throttle sets Retry-After and counts the throttled answer; the caller writes the status.
func (s *Server) throttle(w http.ResponseWriter, endpoint string, code int) {
	secs := int((s.cfg.RetryAfter + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	s.m.throttled.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
}

// pubMsg is one event ready to publish.
type pubMsg struct {
	subject, id string
	data        []byte
}

// publish publishes msgs as one admission: it takes room for all of them in the gate
// (waiting at most wait) or returns ErrThrottled having published nothing, then waits for
// every acknowledgement. It returns the ids JetStream did not acknowledge, with their errors.
func (s *Server) publish(ctx context.Context, msgs []pubMsg, wait time.Duration) (map[string]error, error) {
	n := len(msgs)
	if n == 0 {
		return nil, nil
	}
	if !s.gate.acquire(ctx, n, wait) {
		return nil, ErrThrottled
	}
	defer s.gate.release(n)
	p, err := s.bus.NewPublisher(bus.WithMaxInFlight(min(n, 512)), bus.WithAckTimeout(s.cfg.AckTimeout))
	if err != nil {
		return nil, err
	}
	// The acknowledgements are awaited on a context detached from the request: the room taken
	// in the gate is given back only once nothing of this request is in flight any more.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.cfg.AckTimeout)
	defer cancel()
	failed := map[string]error{}
	for _, m := range msgs {
		if err := p.Publish(actx, m.subject, m.id, m.data); err != nil {
			failed[m.id] = err
		}
	}
	if err := p.Wait(actx); err != nil {
		list, ok := bus.IsAckError(err)
		if !ok {
			return nil, fmt.Errorf("%w: %v", ErrNotStored, err)
		}
		for _, f := range list {
			failed[f.MsgID] = f.Err
		}
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, nil
}
