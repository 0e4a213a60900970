package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/metrics"
)

// DefaultMetricsSeed seeds the permutation tests unless --seed says otherwise, so that two
// runs over the same events print the same p-values.
const DefaultMetricsSeed = 1

type metricsConfig struct {
	target       target
	study        string
	json         bool
	summary      bool
	out          string
	permutations int
	seed         uint64
	pairs        string
	store        bool
	noWait       bool
	opts         analysis.Options
}

func runMetrics(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg metricsConfig
	cfg.registerFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cfg.validate(fs); err != nil {
		return err
	}
	cfg.target.resolve()
	return metricsCommand(ctx, cfg, os.Stdout, os.Stderr)
}

func (c *metricsConfig) registerFlags(fs *flag.FlagSet) {
	c.target.registerFlags(fs)
	fs.StringVar(&c.study, "study", "", "the study (required)")
	fs.BoolVar(&c.json, "json", false, "write the result as JSON (schema: internal/report/metrics.schema.json) instead of tables")
	fs.BoolVar(&c.summary, "summary", false, "print a short table per cell and the significant comparisons only (the others are counted)")
	fs.StringVar(&c.out, "out", "", "write to this file instead of stdout")
	fs.IntVar(&c.permutations, "permutations", metrics.DefaultPermutations, "B, the permutations of each permutation test")
	fs.Uint64Var(&c.seed, "seed", DefaultMetricsSeed, "seed of the permutation tests and sampled estimates (same seed, same events: same report)")
	fs.StringVar(&c.pairs, "pairs", "", `conditions compared within each task and model, "A:B,…" (B may be *); default "baseline:*,harness:harness_sp", consecutive releases for production studies`)
	fs.BoolVar(&c.store, "store", true, "replace the study's rows of the tables metrics and comparisons (a serving analyzer stores them itself)")
	fs.BoolVar(&c.noWait, "no-wait", false, "through a serving analyzer, compute on the events stored so far instead of waiting for ingestion to reach the end of the stream")
}

func (c *metricsConfig) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	case c.study == "":
		return fmt.Errorf("%w: --study is required (analyzer status lists the studies)", cli.ErrUsage)
	case c.json && c.summary:
		return fmt.Errorf("%w: --json and --summary: choose one", cli.ErrUsage)
	case c.permutations < 1:
		return fmt.Errorf("%w: --permutations %d, want at least 1", cli.ErrUsage, c.permutations)
	}
	opts, err := metricsOptions(c.permutations, c.seed, c.pairs)
	if err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	c.opts = opts
	return nil
}

// metricsOptions builds the analysis options from analyzer metrics' flags (pairs as "A:B,…"),
// for the command and for serve's POST /v1/metrics alike.
func metricsOptions(permutations int, seed uint64, pairs string) (analysis.Options, error) {
	opts := analysis.Options{Permutations: permutations, Seed: seed}
	if pairs != "" {
		opts.Pairs = []analysis.Pair{}
		for _, p := range strings.Split(pairs, ",") {
			a, b, ok := strings.Cut(strings.TrimSpace(p), ":")
			if !ok {
				return opts, fmt.Errorf("pairs %q: want A:B items", pairs)
			}
			opts.Pairs = append(opts.Pairs, analysis.Pair{A: a, B: b})
		}
	}
	return opts, opts.Validate()
}

func metricsCommand(ctx context.Context, cfg metricsConfig, stdout, stderr io.Writer) error {
	out, err := metricsOutput(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if cfg.out == "" {
		_, err = stdout.Write(out)
		return err
	}
	return writeFileAtomic(cfg.out, out)
}

// metricsOutput asks a serving analyzer when one answers (it holds the database file, so it
// computes and stores), and otherwise opens the file read-write, computes and stores.
func metricsOutput(ctx context.Context, cfg metricsConfig, stderr io.Writer) ([]byte, error) {
	c, err := cfg.target.client(ctx)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return metricsRemote(ctx, c, cfg, stderr)
	}
	rep, err := computeLocal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = writeMetrics(&buf, cfg.format(), rep)
	return buf.Bytes(), err
}

// Formats of analyzer metrics' output (and of POST /v1/metrics).
const (
	metricsFormatJSON    = "json"
	metricsFormatTables  = "tables"
	metricsFormatSummary = "summary"
)

func (c *metricsConfig) format() string {
	switch {
	case c.json:
		return metricsFormatJSON
	case c.summary:
		return metricsFormatSummary
	}
	return metricsFormatTables
}

// writeMetrics writes r in one of the metrics formats ("" is json).
func writeMetrics(w io.Writer, format string, r *analysis.Result) error {
	switch format {
	case metricsFormatTables:
		return report.WriteMetricsTables(w, r)
	case metricsFormatSummary:
		return report.WriteMetricsSummary(w, r)
	}
	return report.WriteMetricsJSON(w, r)
}

func computeLocal(ctx context.Context, cfg metricsConfig) (*analysis.Result, error) {
	if _, err := os.Stat(cfg.target.dbPath); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s (has the analyzer ingested anything? see --data-dir, --db)", cfg.target.dbPath)
	}
	w, err := warehouse.Open(ctx, warehouse.Config{Path: cfg.target.dbPath, ReadOnly: !cfg.store})
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "lock") {
			return nil, fmt.Errorf("%s is open in another process (a running analyzer?) and no analyzer API answers for %s: "+
				"run analyzer metrics where the database is open, pass the serving analyzer's address with --url, or stop it: %w",
				cfg.target.dbPath, cfg.target.dataDir, err)
		}
		return nil, err
	}
	defer w.Close()
	rep, err := analysis.Compute(ctx, w.DB(), cfg.study, cfg.opts)
	if err != nil {
		return nil, err
	}
	if cfg.store {
		if err := analysis.Store(ctx, w.DB(), rep); err != nil {
			return nil, err
		}
	}
	return rep, w.Close()
}

// ingestionPoll is how often analyzer metrics asks a serving analyzer whether ingestion has
// caught up, and ingestionNote how often it says it is still waiting.
const (
	ingestionPoll = 200 * time.Millisecond
	ingestionNote = 10 * time.Second
)

// metricsRemote has the serving analyzer compute (and store) the study, once its ingestion
// has stored every event the stream held when asked, unless --no-wait.
func metricsRemote(ctx context.Context, c *queryapi.Client, cfg metricsConfig, stderr io.Writer) ([]byte, error) {
	if err := awaitIngestion(ctx, c, cfg.noWait, stderr); err != nil {
		return nil, err
	}
	req := MetricsRequest{Study: cfg.study, Permutations: cfg.permutations, Seed: cfg.seed, Pairs: cfg.pairs, Store: cfg.store, Format: cfg.format()}
	resp, err := c.Do(ctx, http.MethodPost, MetricsPath, req)
	var se *queryapi.StatusError
	switch {
	case errors.As(err, &se) && se.Kind == "no_study":
		return nil, fmt.Errorf("analyzer at %s: %w: %q (no stored event names it; analyzer status lists the studies)", c.BaseURL, analysis.ErrNoStudy, cfg.study)
	case errors.As(err, &se) && se.Kind == "no_runs":
		return nil, fmt.Errorf("analyzer at %s: %w: %s", c.BaseURL, analysis.ErrNoRuns, se.Message)
	case err != nil:
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("analyzer at %s: %w", c.BaseURL, err)
	}
	if cfg.store && resp.Header.Get(HeaderStored) == "true" {
		fmt.Fprintf(stderr, "analyzer metrics: computed and stored by the serving analyzer at %s\n", c.BaseURL)
	}
	return out, nil
}

// awaitIngestion waits until the serving analyzer has stored every event the stream held at
// the first ask, saying so on stderr; with noWait it only says how far behind it is.
func awaitIngestion(ctx context.Context, c *queryapi.Client, noWait bool, stderr io.Writer) error {
	first, err := ingestion(ctx, c)
	if err != nil || first.Behind == 0 {
		return err
	}
	if noWait || !first.Ingesting {
		why := "--no-wait"
		if !first.Ingesting {
			why = "it does not ingest (--no-ingest)"
		}
		fmt.Fprintf(stderr, "analyzer metrics: ingestion is %d events behind; not waiting (%s): computing on the events stored so far\n", first.Behind, why)
		return nil
	}
	fmt.Fprintf(stderr, "analyzer metrics: ingestion is %d events behind; waiting (--no-wait computes on the events stored so far)\n", first.Behind)
	tick := time.NewTicker(ingestionPoll)
	defer tick.Stop()
	noted := time.Now()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		now, err := ingestion(ctx, c)
		if err != nil {
			return err
		}
		if now.Watermark >= first.StreamLast {
			return nil
		}
		if time.Since(noted) >= ingestionNote {
			fmt.Fprintf(stderr, "analyzer metrics: ingestion is %d events behind; waiting\n", first.StreamLast-now.Watermark)
			noted = time.Now()
		}
	}
}

func ingestion(ctx context.Context, c *queryapi.Client) (Ingestion, error) {
	var i Ingestion
	resp, err := c.Do(ctx, http.MethodGet, IngestionPath, nil)
	if err != nil {
		return i, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&i); err != nil {
		return i, fmt.Errorf("analyzer at %s: %s: %w", c.BaseURL, IngestionPath, err)
	}
	return i, nil
}

// writeFileAtomic writes b to path through a temporary file in the same directory, so a
// reader never sees half a report.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
