package assembler

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/otlpmap"
)

// Config configures an Assembler. Zero fields take the defaults below.
type Config struct {
	Mapping otlpmap.Config
	// Grace is how long after a trace's root span arrived the trace is assembled, so that spans
	// of other services exported later still join the run. Default 0.
	Grace time.Duration
	// IdleTimeout is how long a trace whose root has not arrived may go without a new record
	// before it is assembled as an incomplete (aborted) run. Default 5 minutes.
	IdleTimeout time.Duration
	// AckWait is how long a delivered root or seen marker may go unacknowledged (the assembler
	// crashed) before it is delivered again. Default 30 s.
	AckWait time.Duration
	// MaxOpenTraces bounds the traces waiting for their root (the idle consumer's unacknowledged
	// seen markers); beyond it, later traces start their idle timeout late. Default 100,000.
	MaxOpenTraces int
	// Workers is how many traces are assembled at once per process. Default 8.
	Workers int
	// AckTimeout is how long publishing one event may wait for JetStream. Default 10 s.
	AckTimeout time.Duration
}

// Defaults.
const (
	DefaultGrace         = 2 * time.Second // the flag's default: a logs exporter may flush after the trace exporter
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultAckWait       = 30 * time.Second
	DefaultMaxOpenTraces = 100_000
	DefaultWorkers       = 8
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxOpenTraces <= 0 {
		c.MaxOpenTraces = DefaultMaxOpenTraces
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 10 * time.Second
	}
	c.Mapping = c.Mapping.WithDefaults()
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if c.Grace < 0 {
		return fmt.Errorf("%w: trace grace %v is negative", ErrConfig, c.Grace)
	}
	if c.IdleTimeout < 0 || c.AckWait < 0 || c.AckTimeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrConfig)
	}
	if c.MaxOpenTraces < 0 || c.Workers < 0 {
		return fmt.Errorf("%w: negative bound", ErrConfig)
	}
	return nil
}

// RegisterFlags binds the assembly and mapping settings to fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("bucket", "time bucket folded into production run ids: none, hour, day (default), week, month", func(s string) error {
		b, err := otlpmap.ParseBucket(s)
		c.Mapping.Bucket = b
		return err
	})
	fs.BoolVar(&c.Mapping.BucketCondition, "bucket-condition", false, "also append @<bucket> to the condition of production runs")
	fs.Func("task-keys", "comma-separated span/resource attributes giving a production run's task (default "+strings.Join(otlpmap.DefaultTaskKeys, ",")+")", func(s string) error {
		c.Mapping.TaskKeys = splitList(s)
		return nil
	})
	fs.Func("model-keys", "attributes giving the model (default "+strings.Join(otlpmap.DefaultModelKeys, ",")+")", func(s string) error {
		c.Mapping.ModelKeys = splitList(s)
		return nil
	})
	fs.Func("condition-keys", "attributes giving the condition (default "+strings.Join(otlpmap.DefaultConditionKeys, ",")+")", func(s string) error {
		c.Mapping.ConditionKeys = splitList(s)
		return nil
	})
	fs.StringVar(&c.Mapping.DefaultCondition, "default-condition", "production", "condition of runs with none of the condition attributes")
	fs.DurationVar(&c.Grace, "trace-grace", DefaultGrace, "wait this long after a trace's root span for late spans and GenAI log records before assembling the run")
	fs.DurationVar(&c.IdleTimeout, "trace-idle", DefaultIdleTimeout, "assemble a trace whose root never arrived, as an aborted run, after this long without new spans")
	fs.IntVar(&c.MaxOpenTraces, "max-open-traces", DefaultMaxOpenTraces, "traces waiting for their root span whose idle timeout runs at once")
	fs.IntVar(&c.Workers, "assembly-workers", DefaultWorkers, "traces assembled at once by this process")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
