package queryapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// Config configures a Server. Zero fields take the defaults.
type Config struct {
	// Token, if set, must be presented as "Authorization: Bearer <token>" on every endpoint
	// but /healthz.
	Token string
	// Limits bound the queries of POST /v1/sql.
	Limits sqlguard.Config
	// ExportSpool is the directory POST /v1/export writes into before streaming the files
	// (each export in its own subdirectory, removed afterwards). On a hardened database it must
	// be one of the allowed directories given to sqlguard.Harden. Empty disables the endpoint.
	ExportSpool string
	// ExportTables are the tables and views exported; default: none (the caller passes the
	// projection's, queries.Tables()).
	ExportTables []string
	// Collectors are added to /metrics: the warehouse's ingestion metrics (consumer lag, ingest
	// rate, batch latency, rejected events), read live from its own statistics.
	Collectors []prometheus.Collector
	// Status, if set, is added to the /healthz answer as "ingest" (the warehouse's Stats).
	Status func() any
	// MaxBodyBytes bounds a request body; default 1 MiB.
	MaxBodyBytes int64
	// Logger receives one line per failed request; default slog.Default().
	Logger *slog.Logger
}

// Server is the analyzer's HTTP API:
//
//	POST /v1/sql      run one read-only query (JSON, CSV or Arrow IPC answer)
//	GET  /v1/studies  progress of every study (finished vs expected runs)
//	POST /v1/export   the projection as Parquet, partitioned by study, as a tar stream
//	GET  /healthz     liveness and database reachability (never needs the token)
//	GET  /metrics     Prometheus metrics: ingestion (lag, rate, batch latency, rejected) and queries
type Server struct {
	db      *sql.DB
	cfg     Config
	guard   *sqlguard.Guard
	reg     *prometheus.Registry
	metrics *queryMetrics
	mux     *http.ServeMux
}

// NewServer returns the API over db. db should be hardened (sqlguard.Harden) by the caller,
// which knows when its own settings are applied.
func NewServer(db *sql.DB, cfg Config) (*Server, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	guard, err := sqlguard.New(db, cfg.Limits)
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, cfg: cfg, guard: guard}
	if s.reg, s.metrics, err = newRegistry(cfg.Collectors); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("POST /v1/sql", s.auth(http.HandlerFunc(s.sql)))
	s.mux.Handle("GET /v1/studies", s.auth(http.HandlerFunc(s.studies)))
	s.mux.Handle("POST /v1/export", s.auth(http.HandlerFunc(s.export)))
	s.mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Registry returns the server's Prometheus registry, for callers that add their own metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ditto analyzer"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Health is the body of GET /healthz.
type Health struct {
	Status string `json:"status"` // ok, or unavailable when the database does not answer
	Error  string `json:"error,omitempty"`
	Ingest any    `json:"ingest,omitempty"` // Config.Status()
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	h := Health{Status: "ok"}
	if s.cfg.Status != nil {
		h.Ingest = s.cfg.Status()
	}
	if err := s.db.PingContext(ctx); err != nil {
		h.Status, h.Error = "unavailable", err.Error()
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// SQLRequest is the JSON body of POST /v1/sql. A body of any other content type is the SQL
// text itself, with format, limit and timeout as URL query parameters.
type SQLRequest struct {
	SQL     string `json:"sql"`
	Format  string `json:"format,omitempty"`  // json (default), csv or arrow; else the Accept header decides
	Limit   int    `json:"limit,omitempty"`   // rows; 0 for the server's default, capped by its maximum
	Timeout string `json:"timeout,omitempty"` // Go duration ("5s"); empty for the server's default, capped by its maximum
	// Params bind the query's parameters ($1, $2, …) in order: strings, numbers (integers
	// stay exact), booleans and null. They are values, never SQL.
	Params []any `json:"params,omitempty"`
}

// Answer headers of POST /v1/sql, for the CSV and Arrow formats that have no room for them.
const (
	HeaderRowCount  = "X-Ditto-Row-Count"
	HeaderTruncated = "X-Ditto-Truncated"
	HeaderElapsed   = "X-Ditto-Elapsed-Ms"
)

func (s *Server) sql(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, format, lim, err := s.parseSQLRequest(w, r)
	if err != nil {
		s.count("bad_request", start)
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	res, err := s.guard.Query(r.Context(), req.SQL, lim, req.Params...)
	if err != nil {
		status, kind := classify(err)
		s.count(kind, start)
		if status >= 500 {
			s.cfg.Logger.Warn("api: query failed", "err", err)
		}
		writeError(w, status, kind, err.Error())
		return
	}
	s.count("ok", start)
	s.metrics.rows.Observe(float64(len(res.Rows)))
	h := w.Header()
	h.Set("Content-Type", format.MediaType())
	h.Set(HeaderRowCount, strconv.Itoa(len(res.Rows)))
	h.Set(HeaderTruncated, strconv.FormatBool(res.Truncated))
	h.Set(HeaderElapsed, strconv.FormatFloat(float64(res.Elapsed.Microseconds())/1000, 'f', 3, 64))
	if format == FormatCSV {
		h.Set("Content-Disposition", `inline; filename="result.csv"`)
	}
	w.WriteHeader(http.StatusOK)
	if err := Write(w, format, res); err != nil {
		// The status is sent; the client sees a cut body (a CSV without its end, an Arrow
		// stream without its end-of-stream marker, JSON that does not parse).
		s.cfg.Logger.Warn("api: write result", "format", format, "err", err)
	}
}

func (s *Server) count(outcome string, start time.Time) {
	s.metrics.queries.WithLabelValues(outcome).Inc()
	s.metrics.duration.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

func (s *Server) parseSQLRequest(w http.ResponseWriter, r *http.Request) (SQLRequest, Format, sqlguard.Limits, error) {
	var req SQLRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		return req, "", sqlguard.Limits{}, fmt.Errorf("%w: body: %v", ErrBadRequest, err)
	}
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			return req, "", sqlguard.Limits{}, fmt.Errorf("%w: JSON body: %v", ErrBadRequest, err)
		}
		for i, p := range req.Params {
			v, err := paramValue(p)
			if err != nil {
				return req, "", sqlguard.Limits{}, fmt.Errorf("%w: params[%d]: %v", ErrBadRequest, i, err)
			}
			req.Params[i] = v
		}
	} else {
		q := r.URL.Query()
		req = SQLRequest{SQL: string(body), Format: q.Get("format"), Timeout: q.Get("timeout")}
		if l := q.Get("limit"); l != "" {
			if req.Limit, err = strconv.Atoi(l); err != nil {
				return req, "", sqlguard.Limits{}, fmt.Errorf("%w: limit %q", ErrBadRequest, l)
			}
		}
	}
	if strings.TrimSpace(req.SQL) == "" {
		return req, "", sqlguard.Limits{}, fmt.Errorf("%w: no SQL", ErrBadRequest)
	}
	format := Format("")
	if req.Format == "" {
		format = formatFromAccept(r.Header.Get("Accept"))
	}
	if format == "" {
		if format, err = ParseFormat(req.Format); err != nil {
			return req, "", sqlguard.Limits{}, err
		}
	}
	lim := sqlguard.Limits{Rows: req.Limit}
	if req.Limit < 0 {
		return req, "", lim, fmt.Errorf("%w: negative limit", ErrBadRequest)
	}
	if req.Timeout != "" {
		if lim.Timeout, err = time.ParseDuration(req.Timeout); err != nil || lim.Timeout <= 0 {
			return req, "", lim, fmt.Errorf("%w: timeout %q is not a positive duration", ErrBadRequest, req.Timeout)
		}
	}
	return req, format, lim, nil
}

// paramValue converts a decoded JSON parameter to the Go value DuckDB binds: integers as
// int64, other numbers as float64; arrays and objects are refused.
func paramValue(p any) (any, error) {
	switch x := p.(type) {
	case nil, string, bool:
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %v", x, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("%T is not a string, number, boolean or null", p)
}

// classify maps a guard error onto an HTTP status and an error kind.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, sqlguard.ErrRefused):
		return http.StatusForbidden, "refused"
	case errors.Is(err, sqlguard.ErrTimeout):
		return http.StatusGatewayTimeout, "timeout"
	case errors.Is(err, sqlguard.ErrEmpty):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, sqlguard.ErrQuery):
		return http.StatusUnprocessableEntity, "query"
	case errors.Is(err, context.Canceled):
		return 499, "canceled" // the client went away; nginx's code, never seen by it
	}
	return http.StatusInternalServerError, "error"
}

func (s *Server) studies(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	st, err := ReadStudies(ctx, s.db)
	if err != nil {
		s.cfg.Logger.Warn("api: studies", "err", err)
		writeError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Studies []Study `json:"studies"`
	}{st})
}

// MediaTar is the media type of POST /v1/export's answer.
const MediaTar = "application/x-tar"

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ExportSpool == "" {
		writeError(w, http.StatusNotFound, "disabled", "export is not enabled on this server")
		return
	}
	if err := os.MkdirAll(s.cfg.ExportSpool, 0o700); err != nil {
		writeError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	dir, err := os.MkdirTemp(s.cfg.ExportSpool, "export-")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	defer os.RemoveAll(dir)
	m, err := Export(r.Context(), s.db, dir, s.cfg.ExportTables)
	if err != nil {
		s.metrics.exports.WithLabelValues("error").Inc()
		s.cfg.Logger.Warn("api: export", "err", err)
		writeError(w, http.StatusInternalServerError, "export", err.Error())
		return
	}
	var total int64
	for _, t := range m.Tables {
		total += t.Rows
	}
	w.Header().Set("Content-Type", MediaTar)
	w.Header().Set(HeaderRowCount, strconv.FormatInt(total, 10))
	w.WriteHeader(http.StatusOK)
	if err := WriteTar(w, filepath.Clean(dir)); err != nil {
		s.metrics.exports.WithLabelValues("error").Inc()
		s.cfg.Logger.Warn("api: export stream", "err", err)
		return
	}
	s.metrics.exports.WithLabelValues("ok").Inc()
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Kind  string `json:"kind"` // refused, timeout, query, bad_request, unauthorized, error, …
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, ErrorBody{Error: msg, Kind: kind})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", MediaJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
