package main

import (
	"context"
	"flag"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
)

// parseBusFlags parses the arguments of a subcommand whose only flags are the bus's and returns
// the flag set (for its positional arguments) and the bus configuration.
func parseBusFlags(name string, args []string) (*flag.FlagSet, bus.Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var cfg bus.Config
	cfg.RegisterFlags(fs)
	err := cli.Parse(fs, args)
	return fs, cfg, err
}

// openBus connects to the bus cfg names and makes sure its streams exist.
func openBus(ctx context.Context, cfg bus.Config) (*bus.Bus, error) {
	return bus.OpenWithStreams(ctx, cfg)
}
