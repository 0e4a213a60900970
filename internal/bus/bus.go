package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bus is a connection to NATS JetStream, and the embedded server when this process hosts it.
// It is safe for concurrent use. Close it when done.
type Bus struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	server *server.Server // nil unless this process hosts the embedded server
}

// Open connects to cfg.URL or, with no URL, joins or hosts the embedded server for
// cfg.DataDir (see the package doc). It does not create streams: call EnsureStreams.
func Open(ctx context.Context, cfg Config) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bus{cfg: cfg}
	url := cfg.URL
	if url == "" {
		var err error
		if url, err = b.joinOrHost(ctx); err != nil {
			return nil, err
		}
	}
	nc, err := nats.Connect(url, b.connectOptions()...)
	if err != nil {
		b.shutdownServer()
		return nil, fmt.Errorf("bus: connect to %s: %w", cli.RedactURLs(url), err)
	}
	b.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	b.js = js
	return b, nil
}

func (b *Bus) connectOptions() []nats.Option {
	c := b.cfg
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	return opts
}

// urlFile is where the hosting process advertises its embedded server.
func (b *Bus) urlFile() string { return filepath.Join(b.cfg.DataDir, "nats.url") }

// joinOrHost returns the URL of the embedded server for the data directory, starting it in
// this process if no other process answers.
func (b *Bus) joinOrHost(ctx context.Context) (string, error) {
	if raw, err := os.ReadFile(b.urlFile()); err == nil {
		url := strings.TrimSpace(string(raw))
		if reachable(url) {
			return url, nil
		}
	}
	if err := os.MkdirAll(b.cfg.DataDir, 0o755); err != nil {
		return "", fmt.Errorf("bus: data dir: %w", err)
	}
	srv, err := StartEmbedded(ctx, EmbeddedOptions{
		Host: b.cfg.EmbeddedHost, Port: b.cfg.EmbeddedPort,
		StoreDir: filepath.Join(b.cfg.DataDir, "jetstream"), SyncAlways: b.cfg.SyncAlways,
	})
	if err != nil {
		// Another process may have won the race for the port and the store; join it.
		if raw, rerr := os.ReadFile(b.urlFile()); rerr == nil && reachable(strings.TrimSpace(string(raw))) {
			return strings.TrimSpace(string(raw)), nil
		}
		return "", err
	}
	b.server = srv
	url := srv.ClientURL()
	if err := os.WriteFile(b.urlFile(), []byte(url+"\n"), 0o644); err != nil {
		b.shutdownServer()
		return "", fmt.Errorf("bus: advertise embedded server: %w", err)
	}
	return url, nil
}

func reachable(url string) bool {
	host := strings.TrimPrefix(url, "nats://")
	conn, err := net.DialTimeout("tcp", host, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// EmbeddedOptions configure an in-process nats-server with JetStream.
type EmbeddedOptions struct {
	Host       string // default 127.0.0.1
	Port       int    // -1 for a random free port
	StoreDir   string // JetStream file store (required)
	SyncAlways bool   // fsync every write
	ServerName string
}

// StartEmbedded starts an in-process nats-server with JetStream and waits until it accepts
// connections. Shut it down with Shutdown and WaitForShutdown.
func StartEmbedded(ctx context.Context, o EmbeddedOptions) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("%w: embedded server needs a store dir", ErrConfig)
	}
	if o.Host == "" {
		o.Host = DefaultEmbeddedHost
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		Host:       o.Host,
		Port:       o.Port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	if o.SyncAlways {
		opts.SyncAlways = true
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server: %w", err)
	}
	go srv.Start()
	deadline := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	if !srv.ReadyForConnections(deadline) {
		srv.Shutdown()
		return nil, fmt.Errorf("bus: embedded server on %s:%d did not start (port in use or store %s locked?)", o.Host, o.Port, o.StoreDir)
	}
	return srv, nil
}

// Conn returns the NATS connection, for its state (connected, closed) and core NATS. Streams,
// consumers and publishing to JetStream go through the Bus, never through a JetStream context
// made on this connection: that is what keeps their definitions in one place.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// URL returns the server URL the bus is connected to.
func (b *Bus) URL() string { return b.nc.ConnectedUrl() }

// Hosting reports whether this process hosts the embedded server.
func (b *Bus) Hosting() bool { return b.server != nil }

// Config returns the effective configuration.
func (b *Bus) Config() Config { return b.cfg }

// Close drains the connection and, when this process hosts the embedded server, stops it
// (and withdraws its advertised URL).
func (b *Bus) Close() error {
	var errs []error
	if b.nc != nil && !b.nc.IsClosed() {
		if err := b.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
		// Drain is asynchronous; wait for it so that nothing is lost at exit.
		for i := 0; i < 200 && !b.nc.IsClosed(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		b.nc.Close()
	}
	if b.server != nil {
		_ = os.Remove(b.urlFile())
		b.shutdownServer()
	}
	return errors.Join(errs...)
}

func (b *Bus) shutdownServer() {
	if b.server != nil {
		b.server.Shutdown()
		b.server.WaitForShutdown()
		b.server = nil
	}
}
