package simllm

import (
	"fmt"
	"math"
	"time"

	"github.com/dittolab/ditto/internal/tasks"
)

// Config configures a Server. The zero value serves DefaultPersonas over every registered task
// without waiting (LatencyScale 0).
type Config struct {
	// Personas are the models served; nil means DefaultPersonas().
	Personas []Persona
	// LatencyScale multiplies every persona's modelled latency: 1 waits as modelled, 0 (the zero
	// value, for tests and benchmarks) answers at once. Waiting honours the request context.
	LatencyScale float64
	// Tasks are the tasks the personas know; nil means every task registered in package tasks.
	Tasks []*tasks.Task
	// Coding are coding tasks (task files' coding tasks with a catalogue of candidate patches)
	// whose catalogues the personas know beside the shipped instances': a request holding one's
	// prompt is answered as for a shipped instance.
	Coding []*tasks.Task
	// Created is the "created" timestamp of every response; zero means a fixed instant
	// (2026-01-01T00:00:00Z) so that responses are byte-reproducible.
	Created time.Time
	// MaxBodyBytes bounds a request body; 0 means 16 MiB.
	MaxBodyBytes int64
}

// defaultCreated is the fixed "created" of responses and models.
var defaultCreated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Validate reports whether c is usable; errors wrap ErrInvalidConfig or ErrInvalidPersona.
func (c Config) Validate() error {
	if math.IsNaN(c.LatencyScale) || math.IsInf(c.LatencyScale, 0) || c.LatencyScale < 0 {
		return fmt.Errorf("%w: LatencyScale = %v, want a finite value >= 0", ErrInvalidConfig, c.LatencyScale)
	}
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("%w: MaxBodyBytes = %d, want >= 0", ErrInvalidConfig, c.MaxBodyBytes)
	}
	if c.Personas != nil {
		if err := validatePersonas(c.Personas); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, t := range c.Tasks {
		if t == nil || t.Name == "" || t.Ideal == nil {
			return fmt.Errorf("%w: Tasks[%d] is nil or has no name or Ideal", ErrInvalidConfig, i)
		}
		if seen[t.Name] {
			return fmt.Errorf("%w: duplicate task %q", ErrInvalidConfig, t.Name)
		}
		seen[t.Name] = true
	}
	for i, t := range c.Coding {
		if t == nil || t.Coding == nil || t.Coding.Target == nil || len(t.Coding.Target.Candidates) == 0 {
			return fmt.Errorf("%w: Coding[%d] is not a coding task with a catalogue of candidate patches", ErrInvalidConfig, i)
		}
	}
	return nil
}
