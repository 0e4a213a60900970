package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/console"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/warehouse"
)

// DefaultListen is serve's default address: loopback only.
const DefaultListen = "127.0.0.1:8470"

// ExportSpoolDir is the directory, inside the data directory, where serve's exports are
// written before they are streamed; the only directory the hardened database may write.
const ExportSpoolDir = "export-spool"

type serveConfig struct {
	bus      bus.Config
	db       warehouse.Config
	ingest   warehouse.IngestConfig
	limits   sqlguard.Config
	listen   string
	token    string
	noIngest bool
	reports  reportsConfig
	// readTimeout bounds the time a request (headers and body) may take to arrive: a client
	// that sends a body slowly, or never, must not hold a connection and a query slot.
	readTimeout time.Duration
}

// DefaultReadTimeout is serve's default --read-timeout.
const DefaultReadTimeout = 30 * time.Second

func (c *serveConfig) registerFlags(fs *flag.FlagSet) {
	c.bus.RegisterFlags(fs)
	c.db.RegisterFlags(fs)
	c.ingest.RegisterFlags(fs)
	registerReattachFlag(fs, &c.ingest.ReattachEvents)
	cli.String(fs, &c.listen, "listen", "DITTO_ANALYZER_LISTEN", DefaultListen, "HTTP address of the API; port 0 picks a free one")
	cli.Secret(fs, &c.token, "token", "DITTO_ANALYZER_TOKEN", "bearer token required on every endpoint but /healthz")
	fs.DurationVar(&c.limits.Timeout, "query-timeout", sqlguard.DefaultTimeout, "default timeout of a query")
	fs.DurationVar(&c.limits.MaxTimeout, "max-query-timeout", sqlguard.DefaultMaxTimeout, "the longest timeout a client may ask for")
	fs.IntVar(&c.limits.MaxRows, "max-rows", sqlguard.DefaultMaxRows, "default row limit of a query")
	fs.IntVar(&c.limits.RowsCap, "rows-cap", sqlguard.DefaultRowsCap, "the highest row limit a client may ask for")
	fs.IntVar(&c.limits.MaxConcurrent, "max-queries", sqlguard.DefaultConcurrent, "queries running at once (others wait within their timeout)")
	fs.BoolVar(&c.noIngest, "no-ingest", false, "serve the API without ingesting (the database still cannot be opened by another process)")
	fs.DurationVar(&c.readTimeout, "read-timeout", DefaultReadTimeout, "how long a request, body included, may take to arrive")
	c.reports.registerFlags(fs)
}

func (c *serveConfig) validate() error {
	c.db.ResolvePath(c.bus.DataDir)
	c.reports.resolve(c.bus.DataDir)
	if err := c.reports.validate(); err != nil {
		return err
	}
	if c.db.ReadOnly {
		return errors.New("serve needs a writable database")
	}
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return fmt.Errorf("listen %q: %v", c.listen, err)
	}
	for _, err := range []error{c.bus.Validate(), c.db.Validate(), c.ingest.Validate(), c.limits.Validate()} {
		if err != nil {
			return err
		}
	}
	return nil
}

func runServe(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg serveConfig
	cfg.registerFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if err := canServe(); err != nil {
		return err
	}
	return serve(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
}

// serve runs ingestion and the API until ctx ends or one of them fails.
func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	b, err := openBus(ctx, cfg.bus)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := os.MkdirAll(cfg.bus.DataDir, 0o755); err != nil {
		return err
	}
	w, err := warehouse.Open(ctx, cfg.db)
	if err != nil {
		return err
	}
	defer w.Close()

	// The spool is the one directory the database may write once hardened; leftovers of a
	// killed export are removed.
	spool := filepath.Join(cfg.bus.DataDir, ExportSpoolDir)
	if err := os.RemoveAll(spool); err != nil {
		return err
	}
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return err
	}
	if err := sqlguard.Harden(ctx, w.DB(), spool); err != nil {
		return err
	}
	srv, err := queryapi.NewServer(w.DB(), queryapi.Config{
		Token:        cfg.token,
		Limits:       cfg.limits,
		ExportSpool:  spool,
		ExportTables: warehouse.Tables(),
		Collectors:   w.Collectors(),
		Status:       func() any { return ingestStatus(w.Stats()) },
		Logger:       log,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().(*net.TCPAddr)
	if cfg.token == "" && !addr.IP.IsLoopback() {
		log.Warn("the API listens beyond loopback without a token: anyone who reaches it can read the data (set DITTO_ANALYZER_TOKEN)",
			"listen", addr.String())
	}
	baseURL := serveBaseURL(addr)
	ms := newMetricsService(w.DB(), b, w.Stats, !cfg.noIngest, log)
	con, err := console.New(w.DB(), console.Config{Token: cfg.token, Limits: cfg.limits, ReportsDir: cfg.reports.dir,
		ReportsPrefix: ReportsPrefix, Analysis: analysis.Options{Seed: DefaultMetricsSeed}, Logger: log})
	if err != nil {
		return err
	}
	defer con.Close()
	readTimeout := cfg.readTimeout
	if readTimeout <= 0 {
		readTimeout = DefaultReadTimeout
	}
	hs := &http.Server{Handler: con.Handler(withReports(withMetrics(srv, ms, cfg.token), cfg.reports.dir, cfg.token)),
		ReadHeaderTimeout: min(10*time.Second, readTimeout), ReadTimeout: readTimeout, IdleTimeout: 2 * time.Minute}
	hs.RegisterOnShutdown(con.Close) // the Studies page's event streams end with the console
	errc := make(chan error, 2)
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("http: %w", err)
		}
	}()
	ingestDone := make(chan struct{})
	if cfg.noIngest {
		close(ingestDone)
	} else {
		cfg.ingest.Logger = log
		go func() {
			defer close(ingestDone)
			if err := w.Ingest(ctx, b, cfg.ingest); err != nil {
				errc <- fmt.Errorf("ingest: %w", err)
			}
		}()
	}
	stopReports, err := startReports(ctx, w.DB(), b, cfg.reports, log)
	if err != nil {
		return err
	}
	defer stopReports()
	if err := queryapi.WriteURLFile(cfg.bus.DataDir, baseURL); err != nil {
		return err
	}
	defer func() {
		if err := queryapi.RemoveURLFile(cfg.bus.DataDir, baseURL); err != nil {
			log.Warn("remove url file", "err", err)
		}
	}()
	log.Info("serving", "url", baseURL, "console", baseURL+"/", "db", cfg.db.Path, "nats", b.URL(), "ingest", !cfg.noIngest,
		"token", cfg.token != "", "load", warehouse.LoadPath)

	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		log.Warn("http shutdown", "err", serr)
	}
	<-ingestDone
	s := w.Stats()
	log.Info("stopped", "watermark", s.Watermark, "events", s.Events, "rejected", s.Rejected)
	return err
}

// serveBaseURL is the URL clients on this machine use: a wildcard listen address is reached
// on loopback.
func serveBaseURL(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(a.Port))
}

// ingestStatusJSON is the "ingest" member of /healthz.
type ingestStatusJSON struct {
	Running    bool   `json:"running"`
	Watermark  uint64 `json:"watermark"`
	Lag        uint64 `json:"lag"`
	Events     uint64 `json:"events"`
	Rejected   uint64 `json:"rejected"`
	Duplicates uint64 `json:"duplicates"`
	// IDLookups counts the batches whose ids were looked up among the stored ones in DuckDB
	// (their ids not all newer than the largest stored one or in the window of recent ids).
	IDLookups   uint64    `json:"id_lookups"`
	Batches     uint64    `json:"batches"`
	Rate        float64   `json:"rate_events_per_second"`
	LastCommit  time.Time `json:"last_commit"`
	LastBatchMS float64   `json:"last_batch_ms"`
	// RefusedFolds counts the folds of run attempts this process refused (a gap, an event the
	// fold cannot apply): an attempt folded again as its events arrive counts each time, so it
	// is not a count of runs ("runs" of /healthz has those).
	RefusedFolds uint64 `json:"refused_folds"`
}

func ingestStatus(s warehouse.Stats) ingestStatusJSON {
	return ingestStatusJSON{
		Running: s.Running, Watermark: s.Watermark, Lag: s.Lag, Events: s.Events, Rejected: s.Rejected,
		Duplicates: s.Duplicates, IDLookups: s.IDLookups, Batches: s.Batches, Rate: s.Rate, LastCommit: s.LastCommit,
		LastBatchMS: float64(s.LastBatch.Microseconds()) / 1000, RefusedFolds: s.FoldErrors,
	}
}

// errNoArrowServe is serve's refusal in a build without the duckdb_arrow tag.
var errNoArrowServe = errors.New("this binary was built without the duckdb_arrow build tag, which the console and the query API need (they read every answer through DuckDB's Arrow interface, which the driver compiles only with it), so every page and query would fail. Build it with make build, or go build -tags duckdb_arrow ./cmd/analyzer; analyzer ingest works in either build")

// canServe refuses to serve from a build that cannot answer a query (sqlguard.CanStream), where
// the console and the API would start and then fail every request.
func canServe() error {
	if !sqlguard.CanStream {
		return errNoArrowServe
	}
	return nil
}
