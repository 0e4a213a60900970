package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	out          string
	permutations int
	seed         uint64
	pairs        string
	store        bool
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
	fs.StringVar(&c.out, "out", "", "write to this file instead of stdout")
	fs.IntVar(&c.permutations, "permutations", metrics.DefaultPermutations, "B, the permutations of each permutation test")
	fs.Uint64Var(&c.seed, "seed", DefaultMetricsSeed, "seed of the permutation tests and sampled estimates (same seed, same events: same report)")
	fs.StringVar(&c.pairs, "pairs", "", `conditions compared within each task and model, "A:B,…" (B may be *); default "baseline:*,harness:harness_sp", consecutive releases for production studies`)
	fs.BoolVar(&c.store, "store", true, "replace the study's rows of the tables metrics and comparisons (needs the database file, not the API)")
}

func (c *metricsConfig) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	case c.study == "":
		return fmt.Errorf("%w: --study is required (analyzer status lists the studies)", cli.ErrUsage)
	case c.permutations < 1:
		return fmt.Errorf("%w: --permutations %d, want at least 1", cli.ErrUsage, c.permutations)
	}
	c.opts = analysis.Options{Permutations: c.permutations, Seed: c.seed}
	if c.pairs != "" {
		c.opts.Pairs = []analysis.Pair{}
		for _, p := range strings.Split(c.pairs, ",") {
			a, b, ok := strings.Cut(strings.TrimSpace(p), ":")
			if !ok {
				return fmt.Errorf("%w: --pairs %q: want A:B items", cli.ErrUsage, c.pairs)
			}
			c.opts.Pairs = append(c.opts.Pairs, analysis.Pair{A: a, B: b})
		}
	}
	if err := c.opts.Validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return nil
}

func metricsCommand(ctx context.Context, cfg metricsConfig, stdout, stderr io.Writer) error {
	rep, err := computeMetrics(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if cfg.json {
		err = report.WriteMetricsJSON(&buf, rep)
	} else {
		err = report.WriteMetricsTables(&buf, rep)
	}
	if err != nil {
		return err
	}
	if cfg.out == "" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	return writeFileAtomic(cfg.out, buf.Bytes())
}

// computeMetrics reads through a serving analyzer's API when one answers (the file is then
// locked by it, and the report cannot be stored), and otherwise opens the file read-write,
// computes and stores.
func computeMetrics(ctx context.Context, cfg metricsConfig, stderr io.Writer) (*analysis.Result, error) {
	c, err := cfg.target.client(ctx)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return computeRemote(ctx, c, cfg, stderr)
	}
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

func computeRemote(ctx context.Context, c *queryapi.Client, cfg metricsConfig, stderr io.Writer) (*analysis.Result, error) {
	rep, err := analysis.ComputeFrom(ctx, c.Querier(), cfg.study, cfg.opts)
	if err != nil {
		return nil, err
	}
	if cfg.store {
		fmt.Fprintf(stderr, "analyzer metrics: computed through the serving analyzer at %s; NOT stored in the tables metrics and comparisons "+
			"(the API is read-only): run analyzer metrics where the database file is open (stop analyzer serve) to store, or pass --store=false\n", c.BaseURL)
	}
	return rep, nil
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
