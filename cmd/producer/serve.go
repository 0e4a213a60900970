package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/receiver"
)

func runServe(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var (
		bcfg  bus.Config
		icfg  receiver.Config
		debug bool
	)
	bcfg.RegisterFlags(fs)
	icfg.RegisterFlags(fs)
	fs.BoolVar(&debug, "debug", false, "log every mapping note")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	for _, err := range []error{bcfg.Validate(), icfg.Validate()} {
		if err != nil {
			return fmt.Errorf("%w: %w", cli.ErrUsage, err)
		}
	}
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	b, err := openBus(ctx, bcfg)
	if err != nil {
		return err
	}
	defer b.Close()
	srv, err := receiver.New(b, icfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", icfg.WithDefaults().Addr)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	log.Info("producer serve: listening", "addr", ln.Addr().String(), "nats", b.URL())
	return srv.Serve(ctx, ln, 30*time.Second)
}
