package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/schedule"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/tasks"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/worker"
	"github.com/schollz/progressbar/v3"
)

// Defaults for Config.
const (
	DefaultDataDir = "ditto-data/demo"
	DefaultSpec    = "research"
	// DefaultLatencyScale scales the simulated models' modelled latency so that the research
	// study (1,800 runs, DefaultConcurrency in flight) finishes well within 3 minutes on 2
	// cores: the runs wait on the models far more than they use the CPU. Latency figures in
	// the report are wall-clock times with the models' latency scaled by it.
	DefaultLatencyScale = 0.2
	DefaultConcurrency  = 128
	// DefaultPermutations is B of the permutation tests in the demo's report.
	DefaultPermutations = 2000
)

// Config configures Run. Zero fields take the defaults above.
type Config struct {
	// DataDir holds the embedded NATS store, the DuckDB file and the reports. It must be new,
	// empty, or made by an earlier demo (it holds MarkerFile); any other is refused with
	// ErrNotDemoDir.
	DataDir string
	// Fresh empties a DataDir an earlier demo made (the demo starts from nothing by default).
	Fresh bool
	// Spec is the shipped study spec to run (study.ShippedSpecs), or the path of a spec file
	// (a name with a path separator or a .json extension), whose task files the worker runs,
	// starting their MCP servers.
	Spec string
	// N overrides the runs per cell (0: the spec's).
	N int
	// LatencyScale scales the simulated models' latency (0 answers at once). Nil means
	// DefaultLatencyScale.
	LatencyScale *float64
	// Concurrency is the runs in flight in the worker.
	Concurrency int
	// Permutations is B of the permutation tests.
	Permutations int
	// ReportsDir receives the reports (default <DataDir>/reports).
	ReportsDir string
	// Out receives the progress and the table; Progress draws a bar (else plain lines).
	Out      io.Writer
	Progress bool
	Logger   *slog.Logger
	// ToolStderr receives the standard error of the task files' MCP servers (nil: discarded).
	ToolStderr io.Writer
	// Models builds the worker's model clients (nil: the simulated models and
	// OpenAI-compatible clients; see worker.Config.Models).
	Models worker.ModelFactory
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case c.N < 0:
		return fmt.Errorf("%w: n %d < 0", ErrConfig, c.N)
	case c.LatencyScale != nil && *c.LatencyScale < 0:
		return fmt.Errorf("%w: latency scale %v < 0", ErrConfig, *c.LatencyScale)
	case c.Concurrency < 0 || c.Permutations < 0:
		return fmt.Errorf("%w: concurrency and permutations must be >= 0", ErrConfig)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Spec == "" {
		c.Spec = DefaultSpec
	}
	if c.LatencyScale == nil {
		s := DefaultLatencyScale
		c.LatencyScale = &s
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Permutations == 0 {
		c.Permutations = DefaultPermutations
	}
	if c.ReportsDir == "" {
		c.ReportsDir = filepath.Join(c.DataDir, "reports")
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Result is what a demo produced.
type Result struct {
	Study  string
	Runs   int
	Report *report.Report
	// Dir is the report's directory; HTML its HTML file.
	Dir, HTML string
	// RunPhase is how long the runs took (submit to the last event stored); Total the whole demo.
	RunPhase, Total time.Duration
}

// Run runs the demo in this process: an embedded nats-server (fresh store, a free port), the
// simulated models on loopback, a worker, the analyzer's ingestion; it submits the study, shows
// progress until every run is stored in DuckDB, computes the report, writes it (Markdown,
// HTML, JSON), announces it on NATS, and prints the table and the path of the HTML report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	start := time.Now()
	if err := prepareDataDir(cfg.DataDir, cfg.Fresh); err != nil {
		return nil, err
	}
	spec, err := loadSpec(cfg.Spec)
	if err != nil {
		return nil, err
	}
	if cfg.N > 0 && cfg.N != spec.Runs {
		spec.Runs = cfg.N
		spec.Name = fmt.Sprintf("%s-n%d", spec.Name, cfg.N)
	}
	plan, err := study.Expand(spec)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, err := bus.OpenWithStreams(ctx, bus.Config{DataDir: cfg.DataDir, EmbeddedPort: -1, Name: "ditto-demo"})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
	simURL, simWait, err := simllm.Serve(simCtx, "127.0.0.1:0", simllm.Config{LatencyScale: *cfg.LatencyScale, Coding: codingCatalogues(spec)})
	if err != nil {
		stopSim()
		return nil, err
	}
	defer func() { stopSim(); _ = simWait() }()

	w, err := warehouse.Open(ctx, warehouse.Config{Path: warehouse.DefaultPath(cfg.DataDir)})
	if err != nil {
		return nil, err
	}
	defer w.Close()

	var wg sync.WaitGroup
	errc := make(chan error, 2)
	ingCtx, stopIngest := context.WithCancel(ctx)
	defer stopIngest()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Ingest(ingCtx, b, warehouse.IngestConfig{BatchWait: 100 * time.Millisecond}); err != nil {
			errc <- fmt.Errorf("demo: ingest: %w", err)
		}
	}()
	wk, err := worker.New(b, worker.Config{ID: "demo-worker", Concurrency: cfg.Concurrency, SimBaseURL: simURL, Logger: cfg.Logger,
		ShutdownGrace: 5 * time.Second, ToolStderr: cfg.ToolStderr, Models: cfg.Models})
	if err != nil {
		return nil, err
	}
	wkCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := wk.Run(wkCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- fmt.Errorf("demo: worker: %w", err)
		}
	}()
	stop := func() { stopWorker(); stopIngest(); wg.Wait() }

	fmt.Fprintf(cfg.Out, "ditto demo: study %q, %d runs (%d cells × N = %d), simulated models at latency scale %g, %d runs in flight\n",
		spec.Name, len(plan.Jobs), len(plan.Cells), spec.Runs, *cfg.LatencyScale, cfg.Concurrency)
	runStart := time.Now()
	if _, err := study.Submit(ctx, b, plan, "analyzer-demo"); err != nil {
		stop()
		return nil, err
	}
	if err := waitStored(ctx, w, spec.Name, len(plan.Jobs), cfg, errc); err != nil {
		stop()
		return nil, err
	}
	runPhase := time.Since(runStart)
	stop()

	notes := []string{fmt.Sprintf("latency is each run's wall-clock time in the demo process: the simulated models' modelled latency scaled by %g "+
		"(1 is the personas' modelled latency), plus the harness, NATS and worker overhead with %d runs in flight on %d cores; "+
		"tokens, agreement and success do not depend on the scale", *cfg.LatencyScale, cfg.Concurrency, runtime.NumCPU())}
	rep, err := build(ctx, w, spec.Name, report.Options{Analysis: analysis.Options{Permutations: cfg.Permutations}, Notes: notes})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.ReportsDir, rep.Name)
	if err := report.Write(dir, rep); err != nil {
		return nil, err
	}
	if err := schedule.Announce(ctx, b, rep, dir, 0); err != nil {
		return nil, err
	}
	res := &Result{Study: spec.Name, Runs: len(plan.Jobs), Report: rep, Dir: dir, HTML: filepath.Join(dir, report.FileHTML),
		RunPhase: runPhase, Total: time.Since(start)}
	if err := report.WriteSummary(cfg.Out, rep); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(res.HTML)
	fmt.Fprintf(cfg.Out, "\nruns: %s; whole demo: %s\nHTML report: %s\n(also %s and %s beside it)\n",
		runPhase.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), abs, report.FileMarkdown, report.FileJSON)
	return res, nil
}

// loadSpec reads a shipped spec by name or a spec file by path.
func loadSpec(name string) (*study.Spec, error) {
	if strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".json") {
		return study.Load(name)
	}
	raw, err := study.ShippedSpec(name)
	if err != nil {
		return nil, err
	}
	return study.Parse(raw)
}

func build(ctx context.Context, w *warehouse.Warehouse, studyName string, opts report.Options) (*report.Report, error) {
	q, done, err := analysis.Snapshot(ctx, w.DB())
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	rep, err := report.Build(ctx, q, studyName, opts)
	done()
	if err != nil {
		return nil, err
	}
	if err := analysis.Store(ctx, w.DB(), rep.Metrics.Result); err != nil {
		return nil, err
	}
	return rep, nil
}

// waitStored shows progress until every run of the study is stored (finished) in DuckDB.
func waitStored(ctx context.Context, w *warehouse.Warehouse, studyName string, total int, cfg Config, errc <-chan error) error {
	var bar *progressbar.ProgressBar
	if cfg.Progress {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(cfg.Out), progressbar.OptionSetDescription("runs stored"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionFullWidth())
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastLine := time.Now()
	for {
		var done int64
		studies, err := queryapi.ReadStudies(ctx, w.DB())
		if err != nil {
			return err
		}
		for _, s := range studies {
			if s.Study == studyName {
				done = s.FinishedRuns
			}
		}
		if bar != nil {
			_ = bar.Set(int(done))
		} else if time.Since(lastLine) >= 5*time.Second || done >= int64(total) {
			fmt.Fprintf(cfg.Out, "runs stored: %d/%d\n", done, total)
			lastLine = time.Now()
		}
		if done >= int64(total) {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(cfg.Out)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return err
		case <-tick.C:
		}
	}
}

// codingCatalogues are the spec's coding task files that have a catalogue of candidate
// patches, in name order: the simulated models are told them (simllm.Config.Coding).
func codingCatalogues(spec *study.Spec) []*tasks.Task {
	var out []*tasks.Task
	for _, name := range slices.Sorted(maps.Keys(spec.TaskFiles)) {
		t, err := study.TaskOfFile(spec.TaskFiles[name])
		if err == nil && t.Coding != nil && t.Coding.Target != nil && len(t.Coding.Target.Candidates) > 0 {
			out = append(out, t)
		}
	}
	return out
}
