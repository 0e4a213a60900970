package main

import (
	"context"

	"github.com/dittolab/ditto/internal/bus"
)

// openBus connects to the bus cfg names and makes sure its streams exist.
func openBus(ctx context.Context, cfg bus.Config) (*bus.Bus, error) {
	return bus.OpenWithStreams(ctx, cfg)
}
