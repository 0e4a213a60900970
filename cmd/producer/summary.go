package main

import (
	"context"
	"flag"
	"os"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/command"
	"github.com/dittolab/ditto/internal/inspect"
)

func init() {
	commands.Register(command.Command{
		Name:    "summary",
		Summary: "summarise what the events stream holds, by study and event type",
		Run:     runSummary,
	})
}

func runSummary(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	var cfg bus.Config
	cfg.RegisterFlags(fs)
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.EnsureStreams(ctx); err != nil {
		return err
	}
	sum, err := inspect.Summarize(ctx, b)
	if err != nil {
		return err
	}
	sum.Print(os.Stdout)
	return nil
}
