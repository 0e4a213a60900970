package main

import (
	"context"
	"flag"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/command"
)

// parseBusFlags parses the arguments of a subcommand whose only flags are the bus's and returns
// the flag set (for its positional arguments) and the bus configuration.
func parseBusFlags(name string, args []string) (*flag.FlagSet, bus.Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var cfg bus.Config
	cfg.RegisterFlags(fs)
	err := command.Parse(fs, args)
	return fs, cfg, err
}

// openBus connects to the bus cfg names and makes sure its streams exist. The caller closes the
// bus; on error nothing is left open.
func openBus(ctx context.Context, cfg bus.Config) (*bus.Bus, error) {
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := b.EnsureStreams(ctx); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}
