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

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
)

// Server is the ingestion server. Create it with New, serve Handler (or call Serve), and
// Close it when done.
type Server struct {
	cfg  Config
	bus  *bus.Bus
	auth *authenticator
	gate *gate
	conc chan struct{}
	m    *metrics
	log  *slog.Logger
	mux  *http.ServeMux
	now  func() time.Time // the clock event times are checked against

	tokMu   sync.Mutex
	inUseBy map[*Principal]int // requests being processed, by token

	spansMu sync.Mutex
	spans   *bus.Stream // DITTO_SPANS, for the seen-marker look-ups; made at first use
}

// New returns a server publishing to b. log may be nil.
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
		log: log, now: time.Now, inUseBy: map[*Principal]int{},
	}
	s.m = newMetrics(func() float64 { return float64(s.gate.inUse()) })
	s.mux = http.NewServeMux()
	s.mux.Handle("POST /v1/events", s.instrument("events", s.handleEvents))
	s.mux.Handle("POST /v1/traces", s.instrument("traces", s.handleTraces))
	s.mux.Handle("POST /v1/logs", s.instrument("logs", s.handleLogs))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.Connected() {
			http.Error(w, "NATS not connected", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return s, nil
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Registry returns the Prometheus registry of the server's metrics; the process registers its
// other collectors (the assembler's) on it, so that one /metrics shows them all.
func (s *Server) Registry() *prometheus.Registry { return s.m.reg }

// Serve serves HTTP on ln (and, when grpcLn is not nil, OTLP/gRPC on grpcLn) until ctx ends,
// then shuts down gracefully (in-flight requests finish) within the given grace.
func (s *Server) Serve(ctx context.Context, ln, grpcLn net.Listener, shutdownGrace time.Duration) error {
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Each admitted request's body has its own deadline (BodyTimeout, set by instrument);
		// this bounds a request waiting to be admitted too.
		ReadTimeout:    s.cfg.BodyTimeout + 10*time.Second,
		WriteTimeout:   2*s.cfg.AckTimeout + 60*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	var gs *grpc.Server
	if grpcLn != nil {
		gs = s.GRPCServer()
		go func() { errc <- gs.Serve(grpcLn) }()
	}
	stop := func(sctx context.Context) error {
		err := hs.Shutdown(sctx)
		if gs != nil {
			done := make(chan struct{})
			go func() { gs.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-sctx.Done():
				gs.Stop()
			}
		}
		return err
	}
	select {
	case err := <-errc:
		_ = stop(context.Background())
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := stop(sctx)
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, grpc.ErrServerStopped) && err == nil {
		err = e
	}
	return err
}

// Close releases nothing today (every accepted span is in JetStream before it is answered);
// it is kept so that callers need not change when the server holds resources again.
func (s *Server) Close(context.Context) error { return nil }

// spansStream returns the handle on DITTO_SPANS.
func (s *Server) spansStream(ctx context.Context) (*bus.Stream, error) {
	s.spansMu.Lock()
	defer s.spansMu.Unlock()
	if s.spans == nil {
		st, err := s.bus.Stream(ctx, events.SpansStream)
		if err != nil {
			return nil, err
		}
		s.spans = st
	}
	return s.spans, nil
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

// Unwrap lets http.ResponseController reach the connection (for the body's read deadline).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument counts requests and their duration and bounds the requests processed at once:
// MaxConcurrent in all, MaxConcurrentPerToken per token (authentication, from the headers
// alone, comes first), each admitted request's body with a read deadline of BodyTimeout. A
// request that fails authentication goes to h at once (which answers 401 without reading
// the body).
func (s *Server) instrument(endpoint string, h func(http.ResponseWriter, *http.Request, *Principal, error) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			s.m.requests.WithLabelValues(endpoint, strconv.Itoa(rec.code)).Inc()
			s.m.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
		}()
		p, authErr := s.auth.authenticate(r)
		if authErr != nil {
			h(rec, r, nil, authErr)
			return
		}
		if !s.takeToken(p) {
			s.throttle(rec, endpoint, http.StatusTooManyRequests)
			http.Error(rec, s.tokenBusy(p).Error()+"; retry later", http.StatusTooManyRequests)
			return
		}
		defer s.releaseToken(p)
		select {
		case s.conc <- struct{}{}:
			defer func() { <-s.conc }()
			inProgress := s.m.inProgress.WithLabelValues(endpoint)
			inProgress.Inc()
			defer inProgress.Dec()
		default:
			// Too many requests at once: refuse before reading the body, so that memory stays
			// bounded by MaxConcurrent bodies.
			s.throttle(rec, endpoint, http.StatusTooManyRequests)
			http.Error(rec, "ingest: too many concurrent requests; retry later", http.StatusTooManyRequests)
			return
		}
		// A slot is held while the body arrives: a client sending it slowly gives it up when
		// the deadline passes. (A server without deadlines, such as an httptest one, may not
		// support it; the error is then ignored.)
		_ = http.NewResponseController(rec).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		h(rec, r, p, nil)
	})
}

// tokenBusy is the refusal of a request of a token holding MaxConcurrentPerToken already.
func (s *Server) tokenBusy(p *Principal) error {
	return fmt.Errorf("%w: token %s has %d requests in progress", ErrTokenBusy, p.Name, s.cfg.MaxConcurrentPerToken)
}

// takeToken counts one more request of p's token in progress, unless the token already has
// MaxConcurrentPerToken (false). The anonymous principal of InsecureNoAuth is not limited.
func (s *Server) takeToken(p *Principal) bool {
	if s.auth.open && len(s.auth.tokens) == 0 {
		return true
	}
	s.tokMu.Lock()
	defer s.tokMu.Unlock()
	if s.inUseBy[p] >= s.cfg.MaxConcurrentPerToken {
		return false
	}
	s.inUseBy[p]++
	return true
}

func (s *Server) releaseToken(p *Principal) {
	if s.auth.open && len(s.auth.tokens) == 0 {
		return
	}
	s.tokMu.Lock()
	defer s.tokMu.Unlock()
	if s.inUseBy[p]--; s.inUseBy[p] <= 0 {
		delete(s.inUseBy, p)
	}
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
