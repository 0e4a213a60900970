package samples

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/dittolab/ditto/events"
)

var update = flag.Bool("update", false, "rewrite traces.jsonl")

func TestTracesFileIsGenerated(t *testing.T) {
	got, err := Generate(42, 12)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("traces.jsonl", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, Traces) {
		t.Fatal("traces.jsonl differs from Generate(42, 12); run go test ./internal/samples -update")
	}
}

func TestTracesAreWellFormedRuns(t *testing.T) {
	byRun := map[string][]events.Envelope{}
	var order []string
	for i, line := range bytes.Split(bytes.TrimSpace(Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if _, ok := byRun[e.Run]; !ok {
			order = append(order, e.Run)
		}
		byRun[e.Run] = append(byRun[e.Run], e)
	}
	if len(order) != 24 {
		t.Fatalf("sample has %d runs, want 24", len(order))
	}
	for _, run := range order {
		r, err := events.Fold(byRun[run])
		if err != nil || !r.Done() {
			t.Errorf("run %s: fold error %v, done %v", run, err, r.Done())
		}
	}
}
