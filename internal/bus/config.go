package bus

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/dittolab/ditto/internal/cli"
)

// Config says how to reach NATS. With URL empty the bus hosts (or joins) an embedded server
// for DataDir.
type Config struct {
	URL  string // nats://host:port[,nats://...]; empty for the embedded server
	Name string // client connection name, shown by `nats server report connections`

	// Credentials for a remote server (all optional).
	User, Password string
	Token          string
	CredsFile      string // a .creds file (JWT + nkey seed)
	TLSCert        string // client certificate (PEM), with TLSKey
	TLSKey         string
	TLSCA          string // CA bundle (PEM) to verify the server

	// Embedded server settings.
	DataDir      string // store for the embedded server; default ./ditto-data
	EmbeddedHost string // default 127.0.0.1 (loopback only)
	EmbeddedPort int    // default 4222; -1 picks a free port (tests)

	// Streams.
	Replicas        int           // stream replicas: 1 for a single server, 3 in a cluster; default 1
	DuplicateWindow time.Duration // de-duplication window on Nats-Msg-Id; default 2m
	// SyncAlways makes the embedded server fsync every write (sync_interval: always); off, the
	// server's default (2 min) applies: an acknowledged write survives a process kill, not an OS
	// crash. See deploy/README.md.
	SyncAlways bool

	ConnectTimeout time.Duration // default 5s
}

// Defaults for Config.
const (
	DefaultDataDir         = "ditto-data"
	DefaultEmbeddedHost    = "127.0.0.1"
	DefaultEmbeddedPort    = 4222
	DefaultDuplicateWindow = 2 * time.Minute
)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.EmbeddedHost == "" {
		c.EmbeddedHost = DefaultEmbeddedHost
	}
	if c.EmbeddedPort == 0 {
		c.EmbeddedPort = DefaultEmbeddedPort
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.Name == "" {
		c.Name = "ditto"
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || u.Host == "" {
			// The URL may carry a password or a token: it is shown without them.
			return fmt.Errorf("%w: url %q is not nats://host:port", ErrConfig, cli.RedactURLs(c.URL))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("%w: tls cert and tls key go together", ErrConfig)
	}
	for name, path := range map[string]string{"creds file": c.CredsFile, "tls cert": c.TLSCert, "tls key": c.TLSKey, "tls ca": c.TLSCA} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
		}
	}
	if c.Token != "" && c.User != "" {
		return fmt.Errorf("%w: use a token or a user, not both", ErrConfig)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("%w: replicas %d, want 1..5", ErrConfig, c.Replicas)
	}
	if c.DuplicateWindow != 0 && c.DuplicateWindow < time.Second {
		return fmt.Errorf("%w: duplicate window %v, want at least 1s", ErrConfig, c.DuplicateWindow)
	}
	if c.EmbeddedPort < -1 || c.EmbeddedPort > 65535 {
		return fmt.Errorf("%w: embedded port %d", ErrConfig, c.EmbeddedPort)
	}
	return nil
}
