package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/demo"
	"golang.org/x/term"
)

func runDemo(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg demo.Config
	scale := demo.DefaultLatencyScale
	fs.StringVar(&cfg.DataDir, "data-dir", demo.DefaultDataDir, "data directory of the demo: new, empty, or made by an earlier demo (which it empties first unless --keep); never another")
	keep := fs.Bool("keep", false, "keep what an earlier demo left in the data directory instead of starting fresh")
	fs.StringVar(&cfg.Spec, "spec", demo.DefaultSpec, "shipped study spec to run (research or small), or the path of a spec file (its task files' MCP servers are started by the worker)")
	fs.IntVar(&cfg.N, "n", 0, "runs per cell (0: the spec's, 100 for research)")
	fs.Float64Var(&scale, "latency-scale", demo.DefaultLatencyScale, "scale of the simulated models' latency (0 answers at once; latency figures are scaled by it)")
	fs.IntVar(&cfg.Concurrency, "concurrency", demo.DefaultConcurrency, "runs in flight")
	fs.IntVar(&cfg.Permutations, "permutations", demo.DefaultPermutations, "B, the permutations of each permutation test")
	fs.StringVar(&cfg.ReportsDir, "reports-dir", "", "where to write the report (default <data-dir>/reports)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	cfg.Fresh = !*keep
	cfg.LatencyScale = &scale
	cfg.Out = os.Stdout
	cfg.Progress = term.IsTerminal(int(os.Stdout.Fd()))
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	_, err := demo.Run(ctx, cfg)
	if errors.Is(err, demo.ErrNotDemoDir) {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "\nThe console on this data: %s serve --data-dir %s\n(then open http://%s/)\n",
		shellWord(os.Args[0]), shellWord(cfg.DataDir), DefaultListen)
	return nil
}

// shellWord quotes s for a POSIX shell when it holds anything but plain path characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
