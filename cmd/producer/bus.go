package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
)

// parseBusFlags parses the arguments of a subcommand whose only flags are the bus's into fs
// (its positional arguments stay in fs.Args()) and returns the bus configuration, valid.
func parseBusFlags(fs *flag.FlagSet, args []string) (bus.Config, error) {
	var cfg bus.Config
	cfg.RegisterFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	return cfg, nil
}

// openBus connects to the bus cfg names and makes sure its streams exist.
func openBus(ctx context.Context, cfg bus.Config) (*bus.Bus, error) {
	return bus.OpenWithStreams(ctx, cfg)
}
