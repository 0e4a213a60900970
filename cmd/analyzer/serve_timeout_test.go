package main

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
)

// TestServeCutsSlowRequests: a request whose body never finishes arriving is cut off at the
// read timeout. The analyzer's HTTP server had none: such a request held its connection (and
// the query slot behind it) for as long as the client liked.
func TestServeCutsSlowRequests(t *testing.T) {
	srv := bustest.NewServer(t)
	dataDir := t.TempDir()
	cfg := serveConfigFor(srv.ClientURL(), dataDir, "")
	cfg.noIngest = true
	cfg.readTimeout = 500 * time.Millisecond
	c := startServe(t, cfg).client
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
