package warehouse_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
)

// TestMain doubles as a stand-alone nats-server: with DITTO_TEST_NATS_STORE set, the test
// binary starts an embedded server on that store, prints its URL and serves until its standard
// input closes. Memory tests use it to keep the broker's memory out of the measured process.
func TestMain(m *testing.M) {
	if store := os.Getenv("DITTO_TEST_NATS_STORE"); store != "" {
		srv, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{Port: -1, StoreDir: store})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(srv.ClientURL())
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Shutdown()
		srv.WaitForShutdown()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// externalServer starts a nats-server in a child process (this test binary) and connects a bus
// with the streams created. Both end with the test.
func externalServer(t testing.TB) *bus.Bus {
	t.Helper()
	b, _ := externalServerPID(t)
	return b
}

// externalServerPID is externalServer, also returning the child's process id.
func externalServerPID(t testing.TB) (*bus.Bus, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DITTO_TEST_NATS_STORE="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "nats://") {
		t.Fatalf("child nats-server: %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := bus.Open(ctx, bus.Config{URL: strings.TrimSpace(line), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	return b, cmd.Process.Pid
}
