package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bus is a connection to NATS JetStream, and the embedded server when this process hosts it.
// It is safe for concurrent use. Close it when done.
//
// The connection lives as long as the Bus. nats.go reconnects by itself after a network
// failure, but a connection the server closes on purpose (a protocol error such as a control
// line over the server's limit, a permission it revoked) stays closed for good; the Bus then
// dials a new one, with back-off, until it has one or is closed. Everything made through the
// Bus afterwards (publishers' next publishes, consumers ensured again, stream handles) uses
// the new connection; consumers fetched from before must be ensured again, which the ingester
// and the worker do after a fetch error.
type Bus struct {
	cfg    Config
	url    string
	server *server.Server // nil unless this process hosts the embedded server

	mu sync.RWMutex // guards nc and js, replaced when the connection is re-established
	nc *nats.Conn
	js jetstream.JetStream

	closing   chan struct{} // closed by Close: stop re-establishing
	closeOnce sync.Once
	redial    sync.WaitGroup
	redials   atomic.Int64
}

// Open connects to cfg.URL or, with no URL, joins or hosts the embedded server for
// cfg.DataDir (see the package doc). It does not create streams: call EnsureStreams.
func Open(ctx context.Context, cfg Config) (*Bus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bus{cfg: cfg, closing: make(chan struct{})}
	url := cfg.URL
	if url == "" {
		var err error
		if url, err = b.joinOrHost(ctx); err != nil {
			return nil, err
		}
	}
	b.url = url
	if err := b.dial(); err != nil {
		b.shutdownServer()
		return nil, err
	}
	return b, nil
}

// dial connects to b.url and makes the connection and its JetStream context current.
func (b *Bus) dial() error {
	nc, err := nats.Connect(b.url, b.connectOptions()...)
	if err != nil {
		return fmt.Errorf("bus: connect to %s: %w", cli.RedactURLs(b.url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("bus: jetstream: %w", err)
	}
	b.mu.Lock()
	b.nc, b.js = nc, js
	b.mu.Unlock()
	return nil
}

// onClosed runs when a connection of the bus is closed. When the server closed it (nats.go
// does not reconnect then, and keeps the server's error as the connection's last error), dial
// a new one until it works. A connection closed on purpose in this process (Close, or a test
// closing it to play a crash) has no such error and stays closed.
func (b *Bus) onClosed(nc *nats.Conn) {
	select {
	case <-b.closing:
		return
	default:
	}
	b.mu.RLock()
	current := b.nc == nc
	b.mu.RUnlock()
	if !current {
		return
	}
	if nc.LastError() == nil { // closed here on purpose: the bus is closed for good (Closed)
		b.closeOnce.Do(func() { close(b.closing) })
		return
	}
	b.redial.Add(1)
	go func() {
		defer b.redial.Done()
		wait := 100 * time.Millisecond
		for {
			select {
			case <-b.closing:
				return
			case <-time.After(wait):
			}
			if err := b.dial(); err == nil {
				b.redials.Add(1)
				select {
				case <-b.closing: // Close ran meanwhile and drained the old connection only
					b.Conn().Close()
				default:
				}
				return
			}
			wait = min(2*wait, 5*time.Second)
		}
	}()
}

// Redials returns how many times the bus dialled a new connection after the server closed
// one.
func (b *Bus) Redials() int64 { return b.redials.Load() }

// jetStream returns the current JetStream context.
func (b *Bus) jetStream() jetstream.JetStream {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.js
}

func (b *Bus) connectOptions() []nats.Option {
	c := b.cfg
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.ClosedHandler(b.onClosed),
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

// Conn returns the current NATS connection, for its state (connected, closed) and core NATS.
// Streams, consumers and publishing to JetStream go through the Bus, never through a JetStream
// context made on this connection: that is what keeps their definitions in one place. A
// connection the server closed is replaced (see Bus): ask Connected and Closed rather than
// keep the connection.
func (b *Bus) Conn() *nats.Conn {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.nc
}

// Connected reports whether the bus has a connection up now.
func (b *Bus) Connected() bool { return b.Conn().IsConnected() }

// Closed reports whether the bus was closed (Close, or its connection closed in this process):
// it will not connect again. A connection the server closed is not that: the bus is dialling
// a new one.
func (b *Bus) Closed() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

// URL returns the server URL the bus is connected to.
func (b *Bus) URL() string { return b.Conn().ConnectedUrl() }

// Hosting reports whether this process hosts the embedded server.
func (b *Bus) Hosting() bool { return b.server != nil }

// Config returns the effective configuration.
func (b *Bus) Config() Config { return b.cfg }

// Close drains the connection and, when this process hosts the embedded server, stops it
// (and withdraws its advertised URL).
func (b *Bus) Close() error {
	var errs []error
	b.closeOnce.Do(func() { close(b.closing) })
	b.redial.Wait()
	if nc := b.Conn(); nc != nil && !nc.IsClosed() {
		if err := nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
		// Drain is asynchronous; wait for it so that nothing is lost at exit.
		for i := 0; i < 200 && !nc.IsClosed(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		nc.Close()
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
