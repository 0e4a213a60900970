package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/warehouse"
)

// DefaultReattachEvents is the --reattach-every of analyzer ingest and serve: DuckDB's memory
// for the row groups appended is then returned at the first checkpoint after each million
// events (warehouse.IngestConfig.ReattachEvents). serve's query API, console and reports wait
// for it (tens of milliseconds), and it waits for none of them: it is put off while they hold
// the database's connections.
const DefaultReattachEvents = 1_000_000

// registerReattachFlag registers --reattach-every.
func registerReattachFlag(fs *flag.FlagSet, events *int64) {
	fs.Int64Var(events, "reattach-every", DefaultReattachEvents,
		"after a checkpoint, detach and attach the database again once this many events were committed since, returning the memory DuckDB keeps for each row group appended (0: never)")
}

type ingestConfig struct {
	bus       bus.Config
	db        warehouse.Config
	ingest    warehouse.IngestConfig
	once      bool
	statEvery time.Duration
}

func runIngest(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg ingestConfig
	cfg.bus.RegisterFlags(fs)
	cfg.db.RegisterFlagsThreads(fs, warehouse.IngestThreads)
	cfg.ingest.RegisterFlags(fs)
	registerReattachFlag(fs, &cfg.ingest.ReattachEvents)
	fs.BoolVar(&cfg.once, "once", false, "stop once every message in the stream is stored")
	fs.DurationVar(&cfg.statEvery, "stats-every", 10*time.Second, "log ingestion statistics this often (0: never)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	cfg.db.ResolvePath(cfg.bus.DataDir)
	for _, err := range []error{cfg.bus.Validate(), cfg.db.Validate(), cfg.ingest.Validate()} {
		if err != nil {
			return fmt.Errorf("%w: %v", cli.ErrUsage, err)
		}
	}
	return ingest(ctx, cfg)
}

func ingest(ctx context.Context, cfg ingestConfig) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.ingest.Logger = log
	b, err := openBus(ctx, cfg.bus)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := os.MkdirAll(cfg.bus.DataDir, 0o755); err != nil && cfg.db.Path == warehouse.DefaultPath(cfg.bus.DataDir) {
		return err
	}
	w, err := warehouse.Open(ctx, cfg.db)
	if err != nil {
		return err
	}
	defer w.Close()
	log.Info("ingesting", "db", cfg.db.Path, "nats", b.URL(), "durable", cfg.ingest.Durable, "load", warehouse.LoadPath)

	if cfg.statEvery > 0 {
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			t := time.NewTicker(cfg.statEvery)
			defer t.Stop()
			for {
				select {
				case <-sctx.Done():
					return
				case <-t.C:
					s := w.Stats()
					attrs := []any{"watermark", s.Watermark, "lag", s.Lag, "events", s.Events, "rate", int(s.Rate),
						"rejected", s.Rejected, "duplicates", s.Duplicates, "id_lookups", s.IDLookups, "transactions", s.Batches,
						"short_transactions", s.ShortTransactions, "reattaches", s.Reattaches,
						"restarts", s.Restarts, "open_runs", s.OpenRuns, "fold_errors", s.FoldErrors}
					// The memory's parts, as /metrics' ditto_analyzer_memory_bytes names them.
					for _, p := range w.Memory(sctx).Parts() {
						attrs = append(attrs, p.Name+"_mib", mib(p.Bytes))
					}
					log.Info("ingest", attrs...)
				}
			}
		}()
	}
	if cfg.once {
		err = w.CatchUp(ctx, b, cfg.ingest)
	} else {
		err = w.Ingest(ctx, b, cfg.ingest)
	}
	s := w.Stats()
	log.Info("stopped", "watermark", s.Watermark, "events", s.Events, "rejected", s.Rejected, "duplicates", s.Duplicates)
	return err
}

// mib formats bytes as MiB with one decimal.
func mib(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
