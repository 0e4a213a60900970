package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/receiver"
)

func init() {
	commands.Register(cli.Command{
		Name:    "import",
		Summary: "publish events from JSON-lines files (- for stdin); report each invalid line",
		Run:     runImport,
	})
}

func runImport(ctx context.Context, args []string) error {
	fs, cfg, err := parseBusFlags("import", args)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: producer import FILE... (JSON lines, - for stdin)", cli.ErrUsage)
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
		res, err := receiver.Import(ctx, b, in)
		for _, r := range res.Rejected {
			fmt.Fprintf(os.Stderr, "%s:%d: %v\n", path, r.Line, r.Err)
		}
		fmt.Printf("%s: %d lines, %d published, %d rejected\n", path, res.Lines, res.Published, len(res.Rejected))
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
