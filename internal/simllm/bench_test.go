package simllm

import (
	"encoding/json"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

// BenchmarkComplete measures one chat completion at zero latency, mid-run (after two tool
// results), for a free turn and a forced one.
func BenchmarkComplete(b *testing.B) {
	s := mustServer(b, Config{})
	task, _ := tasks.Get("credit_ecl")
	t := &testing.T{}
	l := drive(t, mustServer(b, Config{Personas: []Persona{exactPersona()}}), "sim-exact", task, &task.Instances[0], 1, runOpts{})
	for _, forced := range []bool{false, true} {
		req := map[string]any{"model": "sim-wobbly", "seed": 1, "messages": l.messages[:6], "tools": toolsOf(task)}
		name := "free"
		if forced {
			name = "forced"
			req["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": "calculate_ecl"}}
		}
		body, _ := json.Marshal(req)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, aerr := s.complete(b.Context(), body); aerr != nil {
					b.Fatal(aerr.Message)
				}
			}
		})
	}
}
