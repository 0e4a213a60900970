package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/assembler"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/receiver"
)

func runServe(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var (
		bcfg  bus.Config
		icfg  receiver.Config
		acfg  assembler.Config
		debug bool
	)
	bcfg.RegisterFlags(fs)
	icfg.RegisterFlags(fs)
	acfg.RegisterFlags(fs)
	fs.BoolVar(&debug, "debug", false, "log every mapping note")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	for _, err := range []error{bcfg.Validate(), icfg.Validate(), acfg.Validate()} {
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
	asm, err := assembler.New(b, acfg, log)
	if err != nil {
		return err
	}
	srv.Registry().MustRegister(asm.Collectors()...)
	icfg = icfg.WithDefaults()
	ln, err := net.Listen("tcp", icfg.Addr)
	if err != nil {
		return err
	}
	var gln net.Listener
	if !strings.EqualFold(icfg.GRPCAddr, "off") {
		if gln, err = net.Listen("tcp", icfg.GRPCAddr); err != nil {
			ln.Close()
			return err
		}
	}
	// The assembler runs beside the server: every replica shares its consumers, so traces are
	// assembled wherever their spans were received.
	actx, stopAssembly := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = asm.Run(actx)
	}()
	attrs := []any{"addr", ln.Addr().String(), "nats", b.URL()}
	if gln != nil {
		attrs = append(attrs, "grpc", gln.Addr().String())
	}
	log.Info("producer serve: listening", attrs...)
	err = srv.Serve(ctx, ln, gln, 30*time.Second)
	stopAssembly()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
