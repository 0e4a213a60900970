package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/loadgen"
)

func runLoad(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg bus.Config
	cfg.RegisterFlags(fs)
	var lc loadgen.Config
	fs.Float64Var(&lc.Rate, "rate", 1000, "events per second")
	fs.DurationVar(&lc.Duration, "duration", 30*time.Second, "how long to publish")
	fs.StringVar(&lc.Study, "study", "", "study id of the generated runs (default load-<unix time>)")
	fs.Uint64Var(&lc.Seed, "seed", 1, "seed of the generated content")
	fs.IntVar(&lc.OpenRuns, "open-runs", loadgen.DefaultOpenRuns, "runs in progress at once")
	fs.IntVar(&lc.MaxInFlight, "max-in-flight", loadgen.DefaultMaxInFlight, "publishes awaiting acknowledgement")
	fs.IntVar(&lc.Batch, "batch", bus.DefaultBatchSize, "events per JetStream fast batch (acknowledged every few hundred); 0: each event acknowledged on its own")
	fs.StringVar(&lc.Consumer, "consumer", events.AnalyzerConsumer, "the analyzer's durable consumer (empty: measure publishing only)")
	fs.DurationVar(&lc.Sample, "sample", loadgen.DefaultSample, "interval of lag and memory samples")
	fs.DurationVar(&lc.DrainTimeout, "drain-timeout", loadgen.DefaultDrainTimeout, "how long to wait for the analyzer after publishing")
	watch := fs.String("watch", "", "other processes to sample memory of, name=pid,name=pid (this one is always watched)")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	var err error
	if lc.Watch, err = parseWatch(*watch); err != nil {
		return fmt.Errorf("%w: --watch: %v", cli.ErrUsage, err)
	}
	if lc.Watch == nil {
		lc.Watch = map[string]int{}
	}
	lc.Watch["producer"] = os.Getpid()
	if err := lc.Validate(); err != nil {
		return fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.EnsureStreams(ctx); err != nil {
		return err
	}
	if b.Hosting() {
		fmt.Fprintf(os.Stderr, "note: this process hosts the embedded server (%s); start the analyzer on the same --data-dir to measure it\n", b.URL())
	}
	rep, err := loadgen.Run(ctx, b, lc)
	if rep != nil {
		rep.Print(os.Stdout)
		if *jsonOut != "" {
			raw, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(*jsonOut, raw, 0o644)
			}
			if jerr != nil && err == nil {
				err = jerr
			}
		}
	}
	return err
}

func parseWatch(s string) (map[string]int, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]int{}
	for _, kv := range strings.Split(s, ",") {
		name, pid, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("%q is not name=pid", kv)
		}
		out[name] = n
	}
	return out, nil
}
