package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/receiver"
)

func init() {
	commands.Register(cli.Command{
		Name:    "serve",
		Summary: "ingestion server for production agents: POST /v1/events, OTLP/HTTP /v1/traces, /metrics",
		Run:     runServe,
	})
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
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
	if env := os.Getenv("DITTO_INGEST_TOKENS"); env != "" {
		for _, f := range strings.Fields(env) {
			t, err := receiver.ParseToken(f)
			if err != nil {
				return fmt.Errorf("%w: DITTO_INGEST_TOKENS: %v", cli.ErrUsage, err)
			}
			icfg.Tokens = append(icfg.Tokens, t)
		}
	}
	if err := icfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
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
