package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/worker"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// runConfig is the configuration of `harness-worker run`.
type runConfig struct {
	Bus             bus.Config
	Worker          worker.Config
	Sim             bool    // host the simulated models on loopback for jobs whose endpoint is sim
	SimLatencyScale float64 // 1 waits as modelled, 0 answers at once
	MetricsAddr     string  // serve /metrics here; empty: no metrics server
	LogLevel        string
}

// Validate reports the first invalid setting.
func (c *runConfig) Validate() error {
	if err := c.Bus.Validate(); err != nil {
		return err
	}
	if err := c.Worker.Validate(); err != nil {
		return err
	}
	if c.SimLatencyScale < 0 {
		return errors.New("--sim-latency-scale must be >= 0")
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: %v", c.MetricsAddr, err)
		}
	}
	return nil
}

func runWorker(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg runConfig
	cfg.Bus.RegisterFlags(fs)
	fs.IntVar(&cfg.Worker.Concurrency, "concurrency", worker.DefaultConcurrency, "runs in flight")
	cli.String(fs, &cfg.Worker.ID, "worker-id", "DITTO_WORKER_ID", "", "worker id recorded in events (default <hostname>-<pid>)")
	fs.DurationVar(&cfg.Worker.AckWait, "ack-wait", worker.DefaultAckWait, "redeliver a job whose worker went silent for this long")
	fs.IntVar(&cfg.Worker.MaxAttempts, "max-attempts", worker.DefaultMaxAttempts, "attempts per run before it is recorded as failed")
	fs.DurationVar(&cfg.Worker.ShutdownGrace, "shutdown-grace", worker.DefaultShutdownGrace, "on SIGTERM, how long runs in flight may finish before they are abandoned")
	cfg.Worker.Endpoints.RegisterFlags(fs)
	fs.BoolVar(&cfg.Sim, "sim", true, "host the simulated models on loopback for jobs whose endpoint is sim")
	fs.Float64Var(&cfg.SimLatencyScale, "sim-latency-scale", 1, "scale of the simulated models' latency (0: answer at once)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on this address (e.g. 127.0.0.1:9464)")
	fs.StringVar(&cfg.MetricsAddr, "metrics", "", "alias of --metrics-addr")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", cli.ErrUsage, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", cli.ErrUsage, err)
	}
	cfg.Worker.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return run(ctx, cfg)
}

func run(ctx context.Context, cfg runConfig) error {
	log := cfg.Worker.Logger
	if cfg.Bus.Name == "" {
		cfg.Bus.Name = "ditto-harness-worker"
	}
	b, err := bus.OpenWithStreams(ctx, cfg.Bus)
	if err != nil {
		return err
	}
	defer b.Close()
	// The simulated models and the metrics server outlive ctx: runs in flight may still use
	// them during the shutdown grace period. They stop when the worker has.
	aux, stopAux := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAux()
	if cfg.Sim {
		url, wait, err := simllm.Serve(aux, "", simllm.Config{LatencyScale: cfg.SimLatencyScale})
		if err != nil {
			return err
		}
		defer func() { stopAux(); _ = wait() }()
		cfg.Worker.SimBaseURL = url
		log.Info("simulated models on loopback", "base_url", url, "latency_scale", cfg.SimLatencyScale)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Worker.Registry = reg
	w, err := worker.New(b, cfg.Worker)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		// Healthy while connected to NATS: a worker that lost its server cannot take jobs.
		mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) {
			if !b.Connected() {
				http.Error(rw, "not connected to NATS: "+b.Conn().Status().String(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(rw, "ok")
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		defer srv.Close()
		log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	return w.Run(ctx)
}
