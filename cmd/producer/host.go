package main

import (
	"context"
	"fmt"

	"github.com/dittolab/ditto/internal/cli"
)

func init() {
	commands.Register(cli.Command{
		Name:    "host",
		Summary: "host the embedded NATS server for --data-dir until interrupted (for other processes and the nats CLI)",
		Run:     runHost,
	})
}

func runHost(ctx context.Context, args []string) error {
	_, cfg, err := parseBusFlags("host", args)
	if err != nil {
		return err
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
