package harness

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/tasks"
)

// RunSpec is one run to execute. The envelope identity (study, run id, attempt, sequence
// numbers, source) belongs to the Emitter; the spec carries what the run itself needs and
// records in run.started.
type RunSpec struct {
	Task string // registered task name (tasks.Get)
	// TaskDef, when set, is the task to run instead of the registered one (a task file's,
	// its tools bound by the worker); its Name must be Task.
	TaskDef   *tasks.Task
	Instance  int                 // input instance index (recorded as input_index)
	SeedIndex int                 // index of the seed within the cell (recorded as seed_index)
	Condition condition.Condition // from condition.Parse or condition.New
	Model     string              // model name sent in every request
	Endpoint  string              // endpoint name or base URL, recorded; never a key
	Simulated bool                // the model is one of ditto's simulated models
	Seed      *int64              // per-run seed sent in every request; nil sends none
	Sampling  events.Sampling
}

// Validate reports the first invalid field.
func (s RunSpec) Validate() error {
	switch {
	case s.Task == "":
		return fmt.Errorf("%w: task is required", ErrSpec)
	case s.TaskDef != nil && s.TaskDef.Name != s.Task:
		return fmt.Errorf("%w: task_def is task %q, not %q", ErrSpec, s.TaskDef.Name, s.Task)
	case s.Model == "":
		return fmt.Errorf("%w: model is required", ErrSpec)
	case s.Condition.Name == "":
		return fmt.Errorf("%w: condition is required (use condition.Parse)", ErrSpec)
	case s.Instance < 0 || s.SeedIndex < 0:
		return fmt.Errorf("%w: instance and seed index must not be negative", ErrSpec)
	}
	return nil
}

// Result summarises a run. Plan, States, Tools, Output and Totals (latency aside) are read from
// the fold of the emitted events (events.Run), so they agree with what a consumer folds; the
// other fields are what run.escalated and run.finished record.
type Result struct {
	// Status is events.StatusSucceeded, StatusFailed, StatusEscalated, StatusOverflow,
	// StatusErrored (the model or a tool server never answered; Cause says why) or
	// StatusAborted.
	Status  string
	Success bool            // Task.Check passed on Output (false unless Status is succeeded)
	Output  json.RawMessage // canonical JSON of the final output; nil when the run produced none
	// Plan is the canonical JSON of the accepted plan under Structured Planning, else the raw
	// text of the last proposed plan.
	Plan             string
	States           []string // states entered, repeats included
	Tools            []string // tools executed, retries included
	EscalationReason string
	Error            string       // why the run stopped early (model error, cancellation, step cap), when known
	Cause            events.Cause `json:",omitzero"` // why an errored run errored (zero otherwise)
	Totals           events.Totals
	Latency          time.Duration
}
