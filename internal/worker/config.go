package worker

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for Config.
const (
	DefaultConcurrency   = 4
	DefaultAckWait       = 60 * time.Second
	DefaultMaxAttempts   = 4
	DefaultShutdownGrace = 30 * time.Second
	DefaultNakDelay      = 5 * time.Second
	DefaultFetchWait     = time.Second
	DefaultAckTimeout    = 30 * time.Second
	// recordDeliveries are the deliveries beyond MaxAttempts kept to record an exhausted job:
	// with the Nak delay capped at two minutes, recording can wait out about an hour of
	// JetStream outage before the consumer stops delivering the job.
	recordDeliveries = 30
)

// ModelFactory builds the model client of a job's endpoint. simBaseURL is the base URL of the
// simulated models this worker hosts ("" when none).
type ModelFactory func(ep study.JobEndpoint, simBaseURL string) (llm.Model, error)

// Config configures a Worker. Zero fields take the defaults above.
type Config struct {
	ID          string // worker id, recorded as the events' source id; default <hostname>-<pid>
	Concurrency int    // runs in flight
	Consumer    string // durable consumer name shared by all workers; default events.WorkersConsumer
	// AckWait is how long JetStream waits for an acknowledgement before redelivering a job.
	// The worker sends in-progress acks every AckWait/3 while a run goes on, so a long run is
	// not redelivered; a crashed worker's job is redelivered after AckWait.
	AckWait       time.Duration
	MaxAttempts   int           // attempts per run before it is recorded as failed
	ShutdownGrace time.Duration // how long runs in flight may finish after shutdown begins
	NakDelay      time.Duration // redelivery delay after an infrastructure error
	FetchWait     time.Duration // how long one fetch waits for jobs
	AckTimeout    time.Duration // how long to wait for JetStream to acknowledge a run's events
	// SimBaseURL is the base URL of the simulated models (jobs whose endpoint is sim); empty
	// means this worker hosts none and Naks such jobs.
	SimBaseURL string
	// Models builds model clients; nil means OpenAI-compatible clients (package llm) built
	// from the job's endpoint, cached per endpoint.
	Models ModelFactory
	// WorkspaceRoot holds the worktrees of coding runs (internal/coding/workspace): the worker
	// opens the first free slot under it (<root>/0, <root>/1, …) at its first coding job, and
	// sweeps the worktrees a dead worker left in that slot. Default <temp dir>/ditto-worktrees.
	WorkspaceRoot string
	// CodingConcurrency bounds the coding runs in flight (each builds and tests Go code; more
	// than the CPUs only makes every run slower); default the number of CPUs. Other runs are
	// bounded by Concurrency alone.
	CodingConcurrency int
	// Registry receives the worker's Prometheus metrics; nil means a private registry
	// (Worker.Registry).
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// ToolStderr receives the standard error of the MCP servers the worker starts for the
	// task files of its jobs (nil: discarded).
	ToolStderr io.Writer
	// Endpoints is what the operator allows jobs' endpoints to use: the variables API keys
	// may be read from and the base URLs they may be sent to. A job outside it is recorded
	// as errored (a permanent config cause naming the variable or URL) without its key being
	// read. The zero policy allows study.DefaultKeyEnvs and any base URL.
	Endpoints study.EndpointPolicy
}

func (c Config) withDefaults() Config {
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		c.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Consumer == "" {
		c.Consumer = events.WorkersConsumer
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.NakDelay == 0 {
		c.NakDelay = DefaultNakDelay
	}
	if c.FetchWait == 0 {
		c.FetchWait = DefaultFetchWait
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.CodingConcurrency == 0 {
		c.CodingConcurrency = runtime.NumCPU()
	}
	if c.WorkspaceRoot == "" {
		c.WorkspaceRoot = filepath.Join(os.TempDir(), "ditto-worktrees")
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case c.Concurrency < 0 || c.Concurrency > 10_000:
		return fmt.Errorf("%w: concurrency %d, want 1..10000", ErrConfig, c.Concurrency)
	case c.AckWait < 0 || c.AckWait > 0 && c.AckWait < 300*time.Millisecond:
		return fmt.Errorf("%w: ack wait %v, want >= 300ms", ErrConfig, c.AckWait)
	case c.MaxAttempts < 0:
		return fmt.Errorf("%w: max attempts %d", ErrConfig, c.MaxAttempts)
	case c.ShutdownGrace < 0 || c.NakDelay < 0 || c.FetchWait < 0 || c.AckTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	case strings.ContainsAny(c.Consumer, ".*> \t"):
		return fmt.Errorf("%w: consumer name %q", ErrConfig, c.Consumer)
	}
	if err := c.Endpoints.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
