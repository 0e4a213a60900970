package loadgen

import (
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
)

// Every generated run is a well-formed history: it encodes, decodes and folds.
func TestRunsFold(t *testing.T) {
	g := newRuns("load-test", 1)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	ids := map[string]bool{}
	for i := 0; i < 50; i++ {
		evs := g.next(t0)
		if len(evs) != EventsPerRun {
			t.Fatalf("run %d has %d events, want %d", i, len(evs), EventsPerRun)
		}
		var history []events.Envelope
		for _, e := range evs {
			raw, err := events.Encode(e)
			if err != nil {
				t.Fatalf("Encode(%s) = %v", e.Type, err)
			}
			back, err := events.Decode(raw)
			if err != nil {
				t.Fatalf("Decode(%s) = %v", e.Type, err)
			}
			if ids[e.ID] {
				t.Fatalf("id %s generated twice", e.ID)
			}
			ids[e.ID] = true
			history = append(history, back)
		}
		run, err := events.Fold(history)
		if err != nil {
			t.Fatalf("Fold(run %d) = %v", i, err)
		}
		if !run.Done() {
			t.Errorf("run %d did not finish", i)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		give    Config
		wantErr bool
	}{
		{"ok", Config{Rate: 100, Duration: time.Second}, false},
		{"no rate", Config{Duration: time.Second}, true},
		{"no duration", Config{Rate: 1}, true},
		{"bad study", Config{Rate: 1, Duration: time.Second, Study: "a.b"}, true},
		{"bad pid", Config{Rate: 1, Duration: time.Second, Watch: map[string]int{"x": 0}}, true},
		{"batches", Config{Rate: 1, Duration: time.Second, Batch: 500}, false},
		{"negative batch", Config{Rate: 1, Duration: time.Second, Batch: -1}, true},
	}
	for _, tt := range tests {
		if err := tt.give.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%s: Validate() = %v, wantErr %v", tt.name, err, tt.wantErr)
		}
	}
}
