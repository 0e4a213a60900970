package simllm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve starts the simulated models on addr, which must be a loopback address ("" means
// 127.0.0.1:0, a free port), and returns the base URL to give an OpenAI client
// ("http://127.0.0.1:PORT/v1"). The server runs until ctx is done; wait blocks until it has
// shut down (in-flight requests get up to 5 s) and returns the error that stopped it, nil
// after a clean shutdown.
func Serve(ctx context.Context, addr string, cfg Config) (baseURL string, wait func() error, err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("simllm: serve: address %q: %w", addr, err)
	}
	if !isLoopback(host) {
		return "", nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("simllm: serve: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := hs.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	stopped := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := hs.Shutdown(sctx)
			if serr := <-done; err == nil {
				err = serr
			}
			stopped <- err
		case err := <-done:
			stopped <- err
		}
	}()
	var once sync.Once
	var result error
	wait = func() error {
		once.Do(func() { result = <-stopped })
		return result
	}
	return "http://" + ln.Addr().String() + "/v1", wait, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
