package receiver

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/cli"
)

// Config configures the server. Zero fields take the defaults below.
type Config struct {
	Addr string // listen address; default 127.0.0.1:4318 (the OTLP/HTTP port, loopback)
	// GRPCAddr is the OTLP/gRPC listen address (the collector's TraceService and LogsService);
	// default 127.0.0.1:4317, "off" for none.
	GRPCAddr string

	// Authentication: tokens from AuthFile and Tokens (see ParseToken and LoadAuthFile). With
	// no token at all the server refuses to start unless InsecureNoAuth is set, in which case
	// every request may write every study.
	AuthFile       string
	Tokens         []Token
	InsecureNoAuth bool

	// DefaultStudy is the study of spans with no ditto.study attribute when the token is bound
	// to every study ("*"); a token bound to named studies uses its first. Default "production".
	DefaultStudy string

	MaxBodyBytes  int64 // request body limit, after gzip decompression; default 8 MiB
	MaxEvents     int   // events per /v1/events request; default 5,000
	MaxPending    int   // events published and not yet acknowledged, server-wide; default 8,192
	MaxConcurrent int   // requests processed at once (bounds body memory); default 16
	// MaxConcurrentPerToken is how many of those one token may hold: a client sending slow
	// bodies must not hold every slot while every other client gets 429. Default a quarter
	// of MaxConcurrent (at least 1). Without authentication (InsecureNoAuth) it does not apply.
	MaxConcurrentPerToken int
	// BodyTimeout is how long a request's body may take to arrive, from the moment it is
	// admitted; a body that takes longer is refused (408) and its slot freed. Default 30s.
	BodyTimeout time.Duration
	AdmitWait   time.Duration // how long a request may wait for room before 429; default 200ms
	RetryAfter  time.Duration // Retry-After on 429/503; default 1s
	AckTimeout  time.Duration // per publish; default 10s

	// Times bounds event (and span) times around their arrival.
	Times Window

	// DisableSeenCheck skips the look-up that decides whether a plain root span (not an agent
	// span) closes an agent trace whose spans came earlier; such a root is then rejected like
	// any non-agent span. For benchmarks of the transports only.
	DisableSeenCheck bool
}

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:4318"
	DefaultGRPCAddr     = "127.0.0.1:4317"
	DefaultStudy        = "production"
	DefaultMaxBodyBytes = 8 << 20
	DefaultMaxEvents    = 5_000
	DefaultMaxPending   = 8192
	DefaultBodyTimeout  = 30 * time.Second
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.GRPCAddr == "" {
		c.GRPCAddr = DefaultGRPCAddr
	}
	if c.DefaultStudy == "" {
		c.DefaultStudy = DefaultStudy
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 16
	}
	if c.MaxConcurrentPerToken <= 0 {
		c.MaxConcurrentPerToken = max(c.MaxConcurrent/4, 1)
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	c.Times = c.Times.withDefaults()
	if c.AdmitWait <= 0 {
		c.AdmitWait = 200 * time.Millisecond
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 10 * time.Second
	}
	return c
}

// Validate reports the first invalid setting (of the config with defaults applied).
func (c Config) Validate() error {
	c = c.WithDefaults()
	if err := events.ValidateToken("default study", c.DefaultStudy); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if c.MaxEvents > c.MaxPending {
		return fmt.Errorf("%w: max events per request (%d) exceeds max pending (%d): such a request could never be admitted", ErrConfig, c.MaxEvents, c.MaxPending)
	}
	if c.MaxConcurrentPerToken > c.MaxConcurrent {
		return fmt.Errorf("%w: max concurrent per token (%d) exceeds max concurrent (%d)", ErrConfig, c.MaxConcurrentPerToken, c.MaxConcurrent)
	}
	if c.MaxBodyBytes < events.MaxEventSize {
		return fmt.Errorf("%w: max body %d is below one event's limit %d", ErrConfig, c.MaxBodyBytes, events.MaxEventSize)
	}
	if c.AuthFile != "" {
		if _, err := os.Stat(c.AuthFile); err != nil {
			return fmt.Errorf("%w: auth file: %v", ErrConfig, err)
		}
	}
	if c.AuthFile == "" && len(c.Tokens) == 0 && !c.InsecureNoAuth {
		return fmt.Errorf("%w: no token configured: give --auth-file or --token (or --insecure-no-auth for local testing)", ErrConfig)
	}
	for _, t := range c.Tokens {
		if err := t.validate(); err != nil {
			return err
		}
	}
	return nil
}

// RegisterFlags binds the settings to fs. Without --token, the tokens come from
// DITTO_INGEST_TOKENS (entries separated by white space), which keeps secrets out of the
// process list; the auth file's path from DITTO_INGEST_AUTH_FILE (cli.Parse applies both).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", DefaultAddr, "OTLP/HTTP and /v1/events listen address (host:port)")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", DefaultGRPCAddr, "OTLP/gRPC listen address (host:port), or off")
	cli.String(fs, &c.AuthFile, "auth-file", "DITTO_INGEST_AUTH_FILE", "", "JSON file of bearer tokens and the studies each may write")
	cli.SecretList(fs, "token", "DITTO_INGEST_TOKENS", "bearer token as SECRET=study1,study2 (* for every study); repeatable", func(s string) error {
		t, err := ParseToken(s)
		if err == nil {
			c.Tokens = append(c.Tokens, t)
		}
		return err
	})
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "accept requests without a token (local testing only)")
	fs.StringVar(&c.DefaultStudy, "study", DefaultStudy, "study of spans without a ditto.study attribute, for tokens bound to every study")
	fs.Int64Var(&c.MaxBodyBytes, "max-body", DefaultMaxBodyBytes, "request body limit in bytes (after gzip)")
	fs.IntVar(&c.MaxEvents, "max-events", DefaultMaxEvents, "events per /v1/events request")
	fs.IntVar(&c.MaxPending, "max-pending", DefaultMaxPending, "events awaiting JetStream acknowledgement, server-wide, before 429")
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", 16, "requests processed at once")
	fs.IntVar(&c.MaxConcurrentPerToken, "max-concurrent-per-token", 0, "requests one token may have processed at once (default a quarter of --max-concurrent)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", DefaultBodyTimeout, "how long a request body may take to arrive")
	c.Times.RegisterFlags(fs)
	fs.DurationVar(&c.AdmitWait, "admit-wait", 200*time.Millisecond, "how long a request may wait for room before 429")
	fs.DurationVar(&c.RetryAfter, "retry-after", time.Second, "Retry-After given with 429 and 503")
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
