package receiver_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/receiver"
)

// TestServeGracefulShutdown: Serve on a real loopback listener; an export is answered once its
// spans are in DITTO_SPANS (the server holds nothing of it in memory), and when its context ends
// Serve stops accepting and returns.
func TestServeGracefulShutdown(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	srv, err := receiver.New(b, receiver.Config{Tokens: []receiver.Token{{Name: "all", Secret: tokAll, Studies: []string{"*"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil, 10*time.Second) }()

	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/traces", bytes.NewReader(payload(t, "split_part1.json")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tokAll)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || spanRecords(t, b) != 3 {
		t.Fatalf("export = %d with %d span records stored, want 200 and its 2 spans and seen marker", resp.StatusCode, spanRecords(t, b))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve() = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	http.DefaultClient.CloseIdleConnections()
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Errorf("the listener still accepts after shutdown")
	}
}
