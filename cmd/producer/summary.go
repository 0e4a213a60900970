package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/dittolab/ditto/internal/cli"
)

func runSummary(ctx context.Context, fs *flag.FlagSet, args []string) error {
	cfg, err := parseBusFlags(fs, args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	b, err := openBus(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	sum, err := Summarize(ctx, b)
	if err != nil {
		return err
	}
	sum.Print(os.Stdout)
	return nil
}
