package warehouse_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
)

// TestMain doubles as a stand-alone nats-server: with DITTO_TEST_NATS_STORE set, the test
// binary starts an embedded server on that store, prints its URL and serves until its standard
// input closes. Memory tests use it to keep the broker's memory out of the measured process.
// The benchmarks profile it through its standard input: a line "cpuprofile PATH" starts a CPU
// profile of the server's process into PATH, "stop" ends it; each is answered "ok" (or "ERR …")
// on its standard output once done.
func TestMain(m *testing.M) {
	if store := os.Getenv("DITTO_TEST_NATS_STORE"); store != "" {
		srv, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{Port: -1, StoreDir: store})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println(srv.ClientURL())
		serveCommands(os.Stdin)
		srv.Shutdown()
		srv.WaitForShutdown()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveCommands answers the child server's commands on in until it closes.
func serveCommands(in io.Reader) {
	sc := bufio.NewScanner(in)
	var prof *os.File
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		var err error
		switch cmd {
		case "cpuprofile":
			if prof, err = os.Create(arg); err == nil {
				if err = pprof.StartCPUProfile(prof); err != nil {
					prof.Close()
					prof = nil
				}
			}
		case "stop":
			if prof != nil {
				pprof.StopCPUProfile()
				err = prof.Close()
				prof = nil
			}
		default:
			err = fmt.Errorf("unknown command %q", cmd)
		}
		if err != nil {
			fmt.Println("ERR", err)
			continue
		}
		fmt.Println("ok")
	}
}

// brokerChild is how a test speaks to a child server's commands (see TestMain).
type brokerChild struct {
	in  io.Writer
	out *bufio.Reader
}

// brokerChildren holds each child server's brokerChild by its process id.
var brokerChildren sync.Map

func (c *brokerChild) command(tb testing.TB, line string) {
	tb.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		tb.Fatalf("child nats-server: %s: %v", line, err)
	}
	if reply, err := c.out.ReadString('\n'); err != nil || reply != "ok\n" {
		tb.Fatalf("child nats-server: %s: %q, %v", line, reply, err)
	}
}

// profileBroker starts a CPU profile of the child server pid (externalServerPID) into path and
// returns the function that stops it; with path "" it does nothing.
func profileBroker(tb testing.TB, pid int, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	c, ok := brokerChildren.Load(pid)
	if !ok {
		tb.Fatalf("no child nats-server %d", pid)
	}
	c.(*brokerChild).command(tb, "cpuprofile "+path)
	return func() { c.(*brokerChild).command(tb, "stop") }
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
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait(); brokerChildren.Delete(cmd.Process.Pid) })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
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
	brokerChildren.Store(cmd.Process.Pid, &brokerChild{in: stdin, out: out})
	return b, cmd.Process.Pid
}
