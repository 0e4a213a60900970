package metrics

import (
	"fmt"
	"math"
)

// Call is one executed tool call.
type Call struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Args is the canonical JSON (RFC 8785) of the call's arguments. Equal
	// arguments must have equal bytes; metrics never re-canonicalise.
	Args string `json:"args"`
}

// Run is one run as the analysis sees it (docs/metrics.md, "A run, reduced
// to what the metrics compare"). String fields hold canonical JSON where
// that says so; the package compares them byte for byte.
type Run struct {
	ID string `json:"id"`
	// Plan is the canonical JSON of the accepted plan (Structured Planning
	// on) or the raw text of the last proposed plan ("" if none).
	Plan string `json:"plan"`
	// States are the names of the states entered, in order, repeats included.
	States []string `json:"states"`
	// Tools are the names of the tools executed, in order, retries included.
	Tools []string `json:"tools"`
	// Calls are the executed calls, in order.
	Calls []Call `json:"calls"`
	// Output is the canonical JSON of the final output, or the fixed
	// no-output marker.
	Output string `json:"output"`
	// Success is the ground-truth check (false for escalated or aborted runs).
	Success bool `json:"success"`
	// Tokens is prompt + completion tokens over every model call.
	Tokens int64 `json:"tokens"`
	// LatencyMS is the time from run start to finish in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	// Harness activity counters.
	Retries           int  `json:"retries"`
	PlanReprompts     int  `json:"plan_reprompts"`
	RejectedToolCalls int  `json:"rejected_tool_calls"`
	Escalated         bool `json:"escalated"`
	// PairKey is identical for runs paired across conditions (same input
	// and seed index, e.g. "input=3/seed=17"); empty when unpaired.
	PairKey string `json:"pair_key,omitempty"`
	// InputKey names the input the run processed (production runs); ComputeCellByInput
	// compares only runs of the same key. Empty: unknown, a group of its own.
	InputKey string `json:"input_key,omitempty"`
}

// validate checks the numeric fields the summaries rely on.
func (r *Run) validate(i int) error {
	switch {
	case r.Tokens < 0:
		return fmt.Errorf("%w: run %d (%q): negative tokens %d", ErrInvalidRun, i, r.ID, r.Tokens)
	case math.IsNaN(r.LatencyMS) || math.IsInf(r.LatencyMS, 0):
		return fmt.Errorf("%w: run %d (%q): latency %v", ErrInvalidRun, i, r.ID, r.LatencyMS)
	case r.LatencyMS < 0:
		return fmt.Errorf("%w: run %d (%q): negative latency %v", ErrInvalidRun, i, r.ID, r.LatencyMS)
	case r.Retries < 0 || r.PlanReprompts < 0 || r.RejectedToolCalls < 0:
		return fmt.Errorf("%w: run %d (%q): negative harness counter", ErrInvalidRun, i, r.ID)
	}
	return nil
}
