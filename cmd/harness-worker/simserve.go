package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/simllm"
)

// simServeConfig is the configuration of `harness-worker sim-serve`.
type simServeConfig struct {
	Addr         string
	LatencyScale float64
	Personas     string // persona file (JSON); empty: the default personas
}

func (c simServeConfig) Validate() error {
	if c.LatencyScale < 0 {
		return errors.New("--latency-scale must be >= 0")
	}
	return nil
}

func runSimServe(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg simServeConfig
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "loopback address to listen on (port 0: any free port)")
	fs.Float64Var(&cfg.LatencyScale, "latency-scale", 1, "scale of the modelled latency (0: answer at once)")
	fs.StringVar(&cfg.Personas, "personas", "", "persona file (JSON, as internal/simllm/personas/personas.json); default: the built-in personas")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	sc := simllm.Config{LatencyScale: cfg.LatencyScale}
	if cfg.Personas != "" {
		ps, err := simllm.LoadPersonas(cfg.Personas)
		if err != nil {
			return err
		}
		sc.Personas = ps
	}
	url, wait, err := simllm.Serve(ctx, cfg.Addr, sc)
	if err != nil {
		return err
	}
	names := []string{}
	for _, p := range sc.Personas {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		for _, p := range simllm.DefaultPersonas() {
			names = append(names, p.Name)
		}
	}
	fmt.Fprintf(os.Stdout, "simulated models (%s) at %s\nany OpenAI-compatible client: base URL %s, any API key; Ctrl-C to stop\n",
		strings.Join(names, ", "), url, url)
	return wait()
}
