package bus_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
)

// natsCLI finds the nats CLI (github.com/nats-io/natscli, installed by `make tools` into .bin/).
// Under CI it must be there; elsewhere the test skips, saying how to get it.
func natsCLI(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("DITTO_NATS_CLI"), filepath.Join("..", "..", ".bin", "nats")}
	if p, err := exec.LookPath("nats"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			abs, _ := filepath.Abs(c)
			return abs
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("nats CLI not found under CI: `make tools` installs it into .bin/")
	}
	t.Skip("nats CLI not found: run `make tools` (go install github.com/nats-io/natscli/nats@v0.5.0 into .bin/)")
	return ""
}

// TestNatsCLIReadsTheStream shows that a client no one here wrote reads ditto's stream from an
// embedded server: `nats stream info` and `nats stream view` print the events as JSON.
func TestNatsCLIReadsTheStream(t *testing.T) {
	cli := natsCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, bus.Config{DataDir: t.TempDir(), EmbeddedPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.EnsureStreams(ctx); err != nil {
		t.Fatal(err)
	}
	p, _ := b.NewPublisher()
	for i := int64(1); i <= 3; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-cli", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	info, err := exec.CommandContext(ctx, cli, "--server", b.URL(), "stream", "info", "DITTO_EVENTS").CombinedOutput()
	if err != nil {
		t.Fatalf("nats stream info: %v\n%s", err, info)
	}
	for _, want := range []string{"Subjects: ditto.events.>", "Messages: 3", "Allows Purge: false", "Duplicate Window: 2m0s"} {
		if !strings.Contains(string(info), want) {
			t.Errorf("nats stream info lacks %q:\n%s", want, info)
		}
	}

	// `stream view` pages interactively and insists on a terminal: give it one with script(1)
	// and stop it at its "Next Page?" prompt.
	vctx, vcancel := context.WithTimeout(ctx, 15*time.Second)
	defer vcancel()
	cmd := exec.CommandContext(vctx, "script", "-qec", cli+" --server "+b.URL()+" stream view DITTO_EVENTS 10", "/dev/null")
	cmd.WaitDelay = time.Second
	view, _ := cmd.CombinedOutput() // killed at the prompt: the exit status says nothing
	for _, want := range []string{
		"Subject: ditto.events.study1.run-cli.tool.called",
		`"type":"tool.called"`,
		`"args":{"n":3,"path":"data/a"}`,
	} {
		if !strings.Contains(string(view), want) {
			t.Errorf("nats stream view lacks %q:\n%s", want, view)
		}
	}
}
