// Package bustest starts real, in-process nats-servers with JetStream for tests: no mocks.
package bustest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is an embedded nats-server with JetStream on a random loopback port and a file store
// in a test temp dir. It is shut down when the test ends.
type Server struct {
	*server.Server
	StoreDir string
	t        testing.TB
}

// NewServer starts a server with its store in a fresh temp dir.
func NewServer(t testing.TB) *Server {
	t.Helper()
	return StartAt(t, t.TempDir())
}

// StartAt starts a server on the given store dir (used to restart a server from its store).
func StartAt(t testing.TB, storeDir string) *Server {
	t.Helper()
	return StartOnPort(t, -1, storeDir)
}

// StartOnPort starts a server on a given loopback port (-1: a random one) and store dir, so
// that a test can stop it and start it again at the same address (see FreePort).
func StartOnPort(t testing.TB, port int, storeDir string) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Port: port, StoreDir: storeDir})
	if err != nil {
		t.Fatalf("bustest: start nats-server: %v", err)
	}
	s := &Server{Server: srv, StoreDir: storeDir, t: t}
	t.Cleanup(s.Stop)
	return s
}

// FreePort returns a loopback port that was free when it was called.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bustest: free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down and waits for it; calling it twice is harmless.
func (s *Server) Stop() {
	if s.Server.Running() {
		s.Server.Shutdown()
	}
	s.Server.WaitForShutdown()
}

// Restart stops the server and starts a new one on the same store dir (a new port).
func (s *Server) Restart() *Server {
	s.t.Helper()
	s.Stop()
	return StartAt(s.t, s.StoreDir)
}

// Connect opens a bus to the server with the streams created. It is closed when the test ends.
func (s *Server) Connect(t testing.TB) *bus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, bus.Config{URL: s.ClientURL(), Name: t.Name()})
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatalf("bustest: streams: %v", err)
	}
	return b
}

// JetStream returns a JetStream context on b's connection, for tests that inspect streams or
// make states ditto never makes itself (a stream that allows deletes, a consumer that never
// acknowledges). Code outside tests goes through the bus's own API.
func JetStream(t testing.TB, b *bus.Bus) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(b.Conn())
	if err != nil {
		t.Fatalf("bustest: jetstream: %v", err)
	}
	return js
}

// LimitStream caps stream at maxBytes, new messages refused beyond it (discard new): the server
// then refuses publishes as it does when its disk is full.
func LimitStream(ctx context.Context, t testing.TB, b *bus.Bus, stream string, maxBytes int64) {
	t.Helper()
	js := JetStream(t, b)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("bustest: stream %s: %v", stream, err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxBytes, cfg.Discard = maxBytes, jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("bustest: limiting stream %s: %v", stream, err)
	}
}
