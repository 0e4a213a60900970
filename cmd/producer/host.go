package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/dittolab/ditto/internal/cli"
)

func runHost(ctx context.Context, fs *flag.FlagSet, args []string) error {
	cfg, err := parseBusFlags(fs, args)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if cfg.URL != "" {
		return fmt.Errorf("%w: host runs the embedded server; drop --nats-url", cli.ErrUsage)
	}
	b, err := openBus(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if !b.Hosting() {
		return fmt.Errorf("another process already hosts the embedded server for %s at %s", cfg.DataDir, b.URL())
	}
	fmt.Printf("embedded NATS with JetStream at %s (store %s/jetstream); Ctrl-C stops it\n", b.URL(), cfg.DataDir)
	fmt.Printf("try: nats --server %s stream info DITTO_EVENTS\n", b.URL())
	<-ctx.Done()
	return nil
}
