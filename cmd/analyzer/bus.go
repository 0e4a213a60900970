package main

import (
	"context"

	"github.com/dittolab/ditto/internal/bus"
)

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
