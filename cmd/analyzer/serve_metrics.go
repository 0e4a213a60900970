package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/warehouse"

	"github.com/dittolab/ditto/internal/jsonend"
)

// The endpoints serve adds beside the query API, for analyzer metrics: while serve holds the
// database file no other process can open it, so the serving analyzer computes and stores.
const (
	IngestionPath = "/v1/ingestion"
	MetricsPath   = "/v1/metrics"
	// HeaderStored says whether POST /v1/metrics replaced the study's rows of the tables
	// metrics and comparisons ("true" or "false").
	HeaderStored = "X-Ditto-Stored"
)

// Ingestion is the answer of GET /v1/ingestion: how far ingestion is behind the events
// stream, asked of the stream at the time of the request.
type Ingestion struct {
	Ingesting  bool   `json:"ingesting"`   // false under --no-ingest: the database will not catch up
	Watermark  uint64 `json:"watermark"`   // the stream sequence committed to the database
	StreamLast uint64 `json:"stream_last"` // the stream's last sequence
	Behind     uint64 `json:"behind"`      // StreamLast - Watermark, or 0
}

// MetricsRequest is the body of POST /v1/metrics: analyzer metrics' flags.
type MetricsRequest struct {
	Study        string `json:"study"`
	Permutations int    `json:"permutations,omitempty"` // 0: metrics.DefaultPermutations
	Seed         uint64 `json:"seed"`
	Pairs        string `json:"pairs,omitempty"` // "A:B,…"; empty: the default pairs
	Store        bool   `json:"store"`
	Format       string `json:"format,omitempty"` // json (the ditto.metrics/v1 document, the default), tables or summary
}

// metricsService computes a study's metrics on serve's own database, one study at a time
// (the permutation tests use every core).
type metricsService struct {
	db        *sql.DB
	events    func(context.Context) (*bus.Stream, error)
	stats     func() warehouse.Stats
	ingesting bool
	log       *slog.Logger
	mu        sync.Mutex
}

func newMetricsService(db *sql.DB, b *bus.Bus, stats func() warehouse.Stats, ingesting bool, log *slog.Logger) *metricsService {
	return &metricsService{
		db:        db,
		events:    func(ctx context.Context) (*bus.Stream, error) { return b.Stream(ctx, events.EventsStream) },
		stats:     stats,
		ingesting: ingesting,
		log:       log,
	}
}

// withMetrics serves the metrics endpoints beside the API, behind the same bearer token.
func withMetrics(api http.Handler, s *metricsService, token string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+IngestionPath, bearer(token, http.HandlerFunc(s.ingestion)))
	mux.Handle("POST "+MetricsPath, bearer(token, http.HandlerFunc(s.metrics)))
	mux.Handle("/", api)
	return mux
}

func (s *metricsService) ingestion(w http.ResponseWriter, r *http.Request) {
	i, err := s.behind(r.Context())
	if err != nil {
		writeAPIError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	writeAPIJSON(w, http.StatusOK, i)
}

// behind asks the events stream for its last sequence and compares it with the watermark.
func (s *metricsService) behind(ctx context.Context) (Ingestion, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	i := Ingestion{Ingesting: s.ingesting, Watermark: s.stats().Watermark}
	st, err := s.events(ctx)
	if err != nil {
		return i, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return i, err
	}
	if info.State.Msgs > 0 {
		i.StreamLast = info.State.LastSeq
	}
	if i.StreamLast > i.Watermark {
		i.Behind = i.StreamLast - i.Watermark
	}
	return i, nil
}

func (s *metricsService) metrics(w http.ResponseWriter, r *http.Request) {
	var req MetricsRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := jsonend.Decode(dec, &req); err != nil {
		writeAPIError(w, http.StatusBadRequest, "request", fmt.Sprintf("body: %v", err))
		return
	}
	opts, err := metricsOptions(req.Permutations, req.Seed, req.Pairs)
	if err == nil && req.Study == "" {
		err = errors.New("study is required")
	}
	if err == nil && req.Format != "" && req.Format != metricsFormatJSON && req.Format != metricsFormatTables && req.Format != metricsFormatSummary {
		err = fmt.Errorf("format %q: want json, tables or summary", req.Format)
	}
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "request", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, err := analysis.Compute(r.Context(), s.db, req.Study, opts)
	switch {
	case errors.Is(err, analysis.ErrNoStudy):
		writeAPIError(w, http.StatusNotFound, "no_study", err.Error())
		return
	case errors.Is(err, analysis.ErrNoRuns):
		writeAPIError(w, http.StatusConflict, "no_runs", err.Error())
		return
	case err != nil:
		s.log.Warn("metrics", "study", req.Study, "err", err)
		writeAPIError(w, http.StatusInternalServerError, "metrics", err.Error())
		return
	}
	var buf bytes.Buffer
	err = writeMetrics(&buf, req.Format, rep)
	if err == nil && req.Store {
		err = analysis.Store(r.Context(), s.db, rep)
	}
	if err != nil {
		s.log.Warn("metrics", "study", req.Study, "err", err)
		writeAPIError(w, http.StatusInternalServerError, "metrics", err.Error())
		return
	}
	if req.Format == metricsFormatTables || req.Format == metricsFormatSummary {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set(HeaderStored, fmt.Sprint(req.Store))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// writeAPIError answers in the query API's error shape, {"error": …, "kind": …}.
func writeAPIError(w http.ResponseWriter, status int, kind, msg string) {
	writeAPIJSON(w, status, map[string]string{"error": msg, "kind": kind})
}

func writeAPIJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
