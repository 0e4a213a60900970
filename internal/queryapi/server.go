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
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/queries"

	"github.com/dittolab/ditto/internal/jsonend"
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
	// Public are the tables and views GET /v1/schema lists and error hints may name; default
	// queries.Public(). Hidden are the objects no hint names; default queries.Internal() and
	// the ingester's Arrow views ingest_batch and ingest_folds.
	Public []queries.Object
	Hidden []string
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
//	GET|POST /v1/sql  run one read-only query, answered in JSON, JSON lines, CSV, Arrow or Parquet
//	GET  /v1/schema   the public tables and views: columns, types, descriptions
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
	if cfg.Public == nil {
		cfg.Public = queries.Public()
	}
	if cfg.Hidden == nil {
		cfg.Hidden = append(queries.Internal(), "ingest_batch", "ingest_folds")
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
	s.mux.Handle("GET /v1/sql", s.auth(http.HandlerFunc(s.sql)))
	s.mux.Handle("GET /v1/schema", s.auth(http.HandlerFunc(s.schema)))
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
	// Runs are the projection's run counts, summed over the studies (the studies view, as
	// `analyzer status` and the reports count them), with GET /healthz?runs=1 only: they scan
	// the runs, and a liveness check must stay fast (the ping has 2 s, the counts 30 s).
	Runs *RunCounts `json:"runs,omitempty"`
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
	if r.URL.Query().Get("runs") == "" {
		writeJSON(w, http.StatusOK, h)
		return
	}
	// The counts were asked for: they get a budget of their own, longer than the liveness
	// check's, since they scan every run and a loaded machine can take seconds for that.
	rctx, rcancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer rcancel()
	if st, err := ReadStudies(rctx, s.db); err == nil {
		c := CountRuns(st)
		h.Runs = &c
	} else {
		h.Error = err.Error() // alive, but without the counts
	}
	writeJSON(w, http.StatusOK, h)
}

// SQLRequest is a query: the JSON body of POST /v1/sql, or the URL parameters of GET /v1/sql
// (q, format, limit, max_bytes, timeout). A POST body that is not JSON is the SQL text itself,
// with the other fields as URL parameters.
type SQLRequest struct {
	SQL    string `json:"sql"`
	Format string `json:"format,omitempty"` // json (default), jsonl, columns, csv, arrow or parquet; else the Accept header decides
	Limit  int    `json:"limit,omitempty"`  // rows; 0 for the server's default, capped by its maximum
	// MaxBytes bounds the answer's size; 0 for the server's default, capped by its maximum.
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Timeout  string `json:"timeout,omitempty"` // Go duration ("5s"); empty for the server's default, capped by its maximum
	// Params bind the query's parameters ($1, $2, …) in order: strings, numbers (integers
	// stay exact), booleans and null. They are values, never SQL.
	Params []any `json:"params,omitempty"`
}

// Answer headers of /v1/sql. The row count and truncation are known only at the answer's end:
// an answer that fits in the server's first buffer (answerBuffer, 1 MiB) carries them as
// headers; a longer one, streamed, as HTTP trailers of the same names (and the columns format
// in its body too). X-Ditto-Columns is a header of every answer: the columns and their DuckDB
// types as JSON, [{"name": …, "type": …}, …].
const (
	HeaderColumns     = "X-Ditto-Columns"
	HeaderRowCount    = "X-Ditto-Row-Count"
	HeaderTruncated   = "X-Ditto-Truncated"
	HeaderTruncatedBy = "X-Ditto-Truncated-By" // rows, bytes or timeout
	HeaderElapsed     = "X-Ditto-Elapsed-Ms"
	HeaderError       = "X-Ditto-Error" // a failure after the answer began
)

// answerBuffer is how much of an answer the server holds before it sends the headers: an
// answer that ends within it gets its row count and truncation as headers and a query that
// fails within it a proper error status.
const answerBuffer = 1 << 20

func (s *Server) sql(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	req, format, lim, err := s.parseSQLRequest(w, r)
	if err != nil {
		s.count("bad_request", start)
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	rows, err := s.guard.Stream(r.Context(), req.SQL, lim, req.Params...)
	if err != nil {
		s.queryFailed(w, err, start)
		return
	}
	defer rows.Close()

	cols, _ := json.Marshal(rows.Columns)
	h := w.Header()
	h.Set("Content-Type", format.MediaType())
	h.Set(HeaderColumns, string(cols))
	h.Set("X-Content-Type-Options", "nosniff")
	switch format {
	case FormatCSV:
		h.Set("Content-Disposition", `inline; filename="result.csv"`)
	case FormatParquet:
		h.Set("Content-Disposition", `attachment; filename="result.parquet"`)
	}
	out := &deferredResponse{w: w, limit: answerBuffer}
	sum, werr := WriteAnswer(out, format, rows)
	if !out.sent {
		// The whole answer is in the buffer: its end is known before its first byte is sent.
		if werr == nil && sum.Err != nil {
			s.queryFailed(w, s.unhint(sum.Err), start)
			return
		}
		if werr == nil && sum.TruncatedBy == CutTimeout && sum.Rows == 0 {
			s.queryFailed(w, rows.Err(), start)
			return
		}
		setSummary(h, sum)
		out.send()
	} else {
		setSummary(h, sum)
		if sum.Err != nil {
			h.Set(HeaderError, sum.Err.Error())
		}
	}
	switch {
	case werr != nil:
		// The status is sent; the client sees a cut body (a CSV without its end, an Arrow
		// stream without its end-of-stream marker, JSON that does not parse).
		s.count("write_error", start)
		s.cfg.Logger.Warn("api: write result", "format", format, "err", werr)
	case sum.Err != nil:
		s.count("error_after_start", start)
		s.cfg.Logger.Warn("api: query failed while streaming", "format", format, "err", sum.Err)
	default:
		s.count("ok", start)
	}
	s.metrics.rows.Observe(float64(sum.Rows))
}

// queryFailed answers a query that failed before its answer began.
func (s *Server) queryFailed(w http.ResponseWriter, err error, start time.Time) {
	status, kind := classify(err)
	s.count(kind, start)
	if status >= 500 {
		s.cfg.Logger.Warn("api: query failed", "err", err)
	}
	writeError(w, status, kind, s.unhint(err).Error())
}

func setSummary(h http.Header, sum Summary) {
	h.Set(HeaderRowCount, strconv.Itoa(sum.Rows))
	h.Set(HeaderTruncated, strconv.FormatBool(sum.Truncated))
	if sum.TruncatedBy != "" {
		h.Set(HeaderTruncatedBy, sum.TruncatedBy)
	}
	h.Set(HeaderElapsed, strconv.FormatFloat(float64(sum.Elapsed.Microseconds())/1000, 'f', 3, 64))
}

// deferredResponse holds an answer's first limit bytes before it sends the status and the
// headers: when the answer ends within them, the headers can still say how it ended. Past
// them, the answer streams and its end goes in trailers.
type deferredResponse struct {
	w     http.ResponseWriter
	limit int
	buf   []byte
	sent  bool
}

func (d *deferredResponse) Write(p []byte) (int, error) {
	if !d.sent {
		if len(d.buf)+len(p) <= d.limit {
			d.buf = append(d.buf, p...)
			return len(p), nil
		}
		// The end will come after the headers: announce the trailers that will carry it.
		d.w.Header().Set("Trailer", strings.Join([]string{HeaderRowCount, HeaderTruncated, HeaderTruncatedBy, HeaderElapsed, HeaderError}, ", "))
		if err := d.send(); err != nil {
			return 0, err
		}
	}
	return d.w.Write(p)
}

// send writes the status, the headers and the buffered bytes.
func (d *deferredResponse) send() error {
	d.sent = true
	d.w.WriteHeader(http.StatusOK)
	_, err := d.w.Write(d.buf)
	d.buf = nil
	return err
}

// Flush sends what the response writer buffers, once the headers are out.
func (d *deferredResponse) Flush() {
	if d.sent {
		http.NewResponseController(d.w).Flush()
	}
}

func (s *Server) count(outcome string, start time.Time) {
	s.metrics.queries.WithLabelValues(outcome).Inc()
	s.metrics.duration.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
}

func (s *Server) parseSQLRequest(w http.ResponseWriter, r *http.Request) (SQLRequest, Format, sqlguard.Limits, error) {
	var req SQLRequest
	q := r.URL.Query()
	fromURL := func() error {
		req.Format, req.Timeout = q.Get("format"), q.Get("timeout")
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				return fmt.Errorf("%w: limit %q is not a number", ErrBadRequest, l)
			}
			req.Limit = n
		}
		if l := q.Get("max_bytes"); l != "" {
			n, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: max_bytes %q is not a number", ErrBadRequest, l)
			}
			req.MaxBytes = n
		}
		return nil
	}
	if r.Method == http.MethodGet {
		req.SQL = q.Get("q")
		if req.SQL == "" {
			req.SQL = q.Get("sql")
		}
		if err := fromURL(); err != nil {
			return req, "", sqlguard.Limits{}, err
		}
	} else {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			return req, "", sqlguard.Limits{}, fmt.Errorf("%w: body: %v", ErrBadRequest, err)
		}
		// A JSON body is recognised by its Content-Type or, since SQL never starts with "{",
		// by its first character (curl --data sends any body as a form).
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if ct == "application/json" || bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			dec.DisallowUnknownFields()
			if err := jsonend.Decode(dec, &req); err != nil {
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
			req.SQL = string(body)
			if err := fromURL(); err != nil {
				return req, "", sqlguard.Limits{}, err
			}
		}
	}
	if strings.TrimSpace(req.SQL) == "" {
		return req, "", sqlguard.Limits{}, fmt.Errorf("%w: no SQL (GET /v1/sql?q=…, or the SQL as the POST body)", ErrBadRequest)
	}
	format := Format("")
	if req.Format == "" {
		format = formatFromAccept(r.Header.Get("Accept"))
	}
	if format == "" {
		var err error
		if format, err = ParseFormat(req.Format); err != nil {
			return req, "", sqlguard.Limits{}, err
		}
	}
	lim := sqlguard.Limits{Rows: req.Limit, Bytes: req.MaxBytes}
	if req.Limit < 0 || req.MaxBytes < 0 {
		return req, "", lim, fmt.Errorf("%w: negative limit or max_bytes", ErrBadRequest)
	}
	if req.Timeout != "" {
		var err error
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
