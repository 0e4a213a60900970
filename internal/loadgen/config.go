package loadgen

import (
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
)

// Config configures one load run. Zero fields take the defaults below.
type Config struct {
	Rate     float64       // events per second to publish
	Duration time.Duration // how long to publish
	Study    string        // study id of the generated runs; default load-<unix seconds>
	Seed     uint64        // seed of the generated content (0 is a valid seed)
	// OpenRuns is how many runs are in progress at once (their events interleave, as those of
	// concurrent workers do).
	OpenRuns    int
	MaxInFlight int // publishes awaiting acknowledgement
	// Batch is how many events go in one JetStream fast batch (bus.BatchPublisher: the server
	// acknowledges every few hundred events instead of each); 0 publishes each event with its
	// own acknowledgement (bus.Publisher), as the other ditto publishers do.
	Batch int
	// Stream and Consumer name the analyzer's durable consumer whose acknowledgement floor
	// says how far DuckDB has committed (events.AnalyzerConsumer by default; "" Consumer:
	// measure publishing only).
	Stream   string
	Consumer string
	// Sample is the interval of the lag and memory samples.
	Sample time.Duration
	// DrainTimeout bounds the wait, after publishing, for the analyzer to commit everything.
	DrainTimeout time.Duration
	// Watch names processes whose memory (/proc/<pid>/status) is sampled: name → pid.
	Watch map[string]int
}

// Defaults.
const (
	DefaultOpenRuns     = 64
	DefaultMaxInFlight  = 1024
	DefaultSample       = time.Second
	DefaultDrainTimeout = 2 * time.Minute
)

func (c Config) withDefaults(now time.Time) Config {
	if c.Study == "" {
		c.Study = fmt.Sprintf("load-%d", now.Unix())
	}
	if c.OpenRuns == 0 {
		c.OpenRuns = DefaultOpenRuns
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Stream == "" {
		c.Stream = events.EventsStream
	}
	if c.Sample == 0 {
		c.Sample = DefaultSample
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case c.Rate <= 0 || c.Rate > 1e7:
		return fmt.Errorf("%w: rate %v events/s, want (0, 1e7]", ErrConfig, c.Rate)
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return fmt.Errorf("%w: duration %v, want (0, 24h]", ErrConfig, c.Duration)
	case c.OpenRuns < 0 || c.MaxInFlight < 0 || c.Batch < 0:
		return fmt.Errorf("%w: open runs, max in flight and batch must not be negative", ErrConfig)
	case c.Sample < 0 || c.DrainTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	}
	if c.Study != "" {
		if err := events.ValidateToken("study", c.Study); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	for name, pid := range c.Watch {
		if pid <= 0 {
			return fmt.Errorf("%w: watch %s: pid %d", ErrConfig, name, pid)
		}
	}
	return nil
}
