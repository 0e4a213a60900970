package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/receiver"
)

func runImport(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var icfg receiver.ImportConfig
	icfg.Times.RegisterFlags(fs)
	cfg, err := parseBusFlags(fs, args)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: name at least one FILE (JSON lines; - reads stdin)", cli.ErrUsage)
	}
	b, err := openBus(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	rejected := 0
	for _, path := range fs.Args() {
		in := os.Stdin
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		res, err := receiver.Import(ctx, b, in, icfg)
		for _, r := range res.Rejected {
			fmt.Fprintf(os.Stderr, "%s:%d: %v\n", path, r.Line, r.Err)
		}
		fmt.Printf("%s: %d lines, %d published, %d rejected", path, res.Lines, res.Published, len(res.Rejected))
		if res.Canonicalized > 0 {
			fmt.Printf(" (%d stored with their JSON values in canonical form)", res.Canonicalized)
		}
		fmt.Println()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rejected += len(res.Rejected)
	}
	if rejected > 0 {
		return &cli.ExitError{Code: 1, Err: fmt.Errorf("%d line(s) rejected", rejected)}
	}
	return nil
}
