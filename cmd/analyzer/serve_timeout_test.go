package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/queryapi"
)

// TestServeCutsSlowRequests: a request whose body never finishes arriving is cut off at the
// read timeout. The analyzer's HTTP server had none: such a request held its connection (and
// the query slot behind it) for as long as the client liked.
func TestServeCutsSlowRequests(t *testing.T) {
	srv := bustest.NewServer(t)
	dataDir := t.TempDir()
	var cfg serveConfig
	cfg.bus = bus.Config{URL: srv.ClientURL(), DataDir: dataDir}
	cfg.listen = "127.0.0.1:0"
	cfg.noIngest = true
	cfg.readTimeout = 500 * time.Millisecond
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve() = %v", err)
		}
	}()
	var c *queryapi.Client
	waitFor(t, "analyzer.url", func() (bool, error) {
		var err error
		c, err = queryapi.Discover(ctx, dataDir, "")
		return err == nil, err
	})
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers and the start of a body that announces more than ever comes.
	if _, err := io.WriteString(conn, "POST /v1/sql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"sql\":"); err != nil {
		t.Fatal(err)
	}
	// The server answers or hangs up once the read timeout passes; the test gives it 20s.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server still held a request with a stalled body after 20s (read timeout 500ms)")
	}
}
