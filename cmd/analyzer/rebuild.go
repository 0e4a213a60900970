package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/warehouse"
)

type rebuildConfig struct {
	bus     bus.Config
	db      warehouse.Config
	ingest  warehouse.IngestConfig
	out     string
	replace bool
}

func runRebuild(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg rebuildConfig
	cfg.bus.RegisterFlags(fs)
	cfg.db.RegisterFlagsThreads(fs, warehouse.IngestThreads)
	fs.IntVar(&cfg.ingest.BatchSize, "batch-size", warehouse.DefaultBatchSize, "events per fetched batch (at most)")
	fs.IntVar(&cfg.ingest.TxnBatches, "txn-batches", warehouse.DefaultTxnBatches, "fetched batches one DuckDB transaction holds open with a backlog (at most)")
	fs.StringVar(&cfg.out, "out", "", "write the new database here instead (it must not exist); the --db file is left alone")
	fs.BoolVar(&cfg.replace, "replace", true, "without --out: replace --db, keeping the old file as <db>.bak")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	cfg.db.ResolvePath(cfg.bus.DataDir)
	if cfg.out == "" && !cfg.replace {
		return fmt.Errorf("%w: give --out FILE, or leave --replace on", cli.ErrUsage)
	}
	if err := cfg.bus.Validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	return rebuild(ctx, cfg)
}

func rebuild(ctx context.Context, cfg rebuildConfig) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := openBus(ctx, cfg.bus)
	if err != nil {
		return err
	}
	defer b.Close()
	target := cfg.out
	if target == "" {
		// DuckDB locks a file while a process writes it: refuse to swap under a running analyzer.
		if _, err := os.Stat(cfg.db.Path); err == nil {
			w, err := warehouse.Open(ctx, warehouse.Config{Path: cfg.db.Path, ReadOnly: true})
			if err != nil {
				return fmt.Errorf("%s is in use (stop the analyzer first, or use --out): %w", cfg.db.Path, err)
			}
			w.Close()
		}
		// Build beside the database, then swap: readers never see a half-built file.
		target = cfg.db.Path + ".rebuild"
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		_ = os.Remove(target + ".wal")
	}
	start := time.Now()
	log.Info("rebuilding", "into", target)
	if err := warehouse.Rebuild(ctx, b, target, cfg.ingest); err != nil {
		return err
	}
	w, err := warehouse.Open(ctx, warehouse.Config{Path: target, ReadOnly: true})
	if err != nil {
		return err
	}
	pos, err := w.Position(ctx, "")
	w.Close()
	if err != nil {
		return err
	}
	log.Info("rebuilt", "into", target, "watermark", pos.Watermark, "events", pos.Events, "rejected", pos.Rejected,
		"duplicates", pos.Duplicates, "took", time.Since(start).Round(time.Millisecond))
	if cfg.out != "" {
		return nil
	}
	if _, err := os.Stat(cfg.db.Path); err == nil {
		if err := os.Rename(cfg.db.Path, cfg.db.Path+".bak"); err != nil {
			return fmt.Errorf("keep the old database: %w", err)
		}
		_ = os.Rename(cfg.db.Path+".wal", cfg.db.Path+".bak.wal")
	}
	if err := os.Rename(target, cfg.db.Path); err != nil {
		return fmt.Errorf("swap in the rebuilt database: %w", err)
	}
	log.Info("replaced", "db", cfg.db.Path, "old", cfg.db.Path+".bak")
	return nil
}
