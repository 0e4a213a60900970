package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/metrics"
)

type reportConfig struct {
	metrics metricsConfig // target, study, permutations, seed, pairs
	out     string
}

func runReport(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg reportConfig
	m := &cfg.metrics
	m.target.registerFlags(fs)
	fs.StringVar(&m.study, "study", "", "the study (required)")
	fs.StringVar(&cfg.out, "out", "", "directory to write the report into (default <data-dir>/reports/<study>)")
	fs.IntVar(&m.permutations, "permutations", metrics.DefaultPermutations, "B, the permutations of each permutation test")
	fs.Uint64Var(&m.seed, "seed", DefaultMetricsSeed, "seed of the permutation tests (same seed, same events: same report)")
	fs.StringVar(&m.pairs, "pairs", "", `conditions compared within each task and model, "A:B,…" (B may be *); default "baseline:*,harness:harness_sp"`)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := m.validate(fs); err != nil {
		return err
	}
	m.target.resolve()
	if cfg.out == "" {
		cfg.out = filepath.Join(m.target.dataDir, "reports", m.study)
	}
	return reportCommand(ctx, cfg, os.Stdout)
}

// reportCommand builds the report through a serving analyzer's API when one answers, and
// otherwise from the database file opened read-only, in one transaction.
func reportCommand(ctx context.Context, cfg reportConfig, stdout io.Writer) error {
	m := cfg.metrics
	opts := report.Options{Analysis: m.opts}
	c, err := m.target.client(ctx)
	if err != nil {
		return err
	}
	var rep *report.Report
	if c != nil {
		rep, err = report.Build(ctx, c.Querier(), m.study, opts)
	} else {
		db, oerr := m.target.open(ctx)
		if oerr != nil {
			return oerr
		}
		defer db.Close()
		q, done, serr := analysis.Snapshot(ctx, db)
		if serr != nil {
			return serr
		}
		defer done()
		rep, err = report.Build(ctx, q, m.study, opts)
	}
	if err != nil {
		return err
	}
	if err := report.Write(cfg.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d cells, %d comparisons, %d findings\n", rep.Title, len(rep.Metrics.Cells), len(rep.Metrics.Comparisons), len(rep.Findings))
	for _, f := range rep.Findings {
		fmt.Fprintf(stdout, "  - %s\n", f.Sentence)
	}
	abs, _ := filepath.Abs(cfg.out)
	fmt.Fprintf(stdout, "wrote %s, %s and %s in %s\n", report.FileMarkdown, report.FileHTML, report.FileJSON, abs)
	return nil
}
