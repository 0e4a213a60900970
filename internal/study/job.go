package study

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/tasks"
)

// JobVersion is the version of the job format Encode writes.
const JobVersion = 1

// Job is one run to execute: the message a worker pulls from DITTO_JOBS. It carries everything
// the run needs, resolved at submission (components and limits of the condition, the endpoint's
// address), so that workers never need the spec. It never carries a secret: only the name of
// the environment variable holding the endpoint's API key.
type Job struct {
	Version    int      `json:"v"`
	Study      string   `json:"study"`
	Run        string   `json:"run"`
	Task       string   `json:"task"`
	Model      string   `json:"model"`
	Condition  string   `json:"condition"`
	Components []string `json:"components"` // events.Component* names, sorted
	Limits     Limits   `json:"limits"`     // resolved; zero fields mean harness defaults
	// Context is the condition's context management (absent: unmanaged).
	Context    *condition.Context `json:"context,omitempty"`
	Endpoint   JobEndpoint        `json:"endpoint"`
	Sampling   events.Sampling    `json:"sampling"`
	Seed       *int64             `json:"seed,omitempty"`
	SeedIndex  int                `json:"seed_index"`
	InputIndex int                `json:"input_index"`
	Index      int                `json:"index"` // run index within its cell, from 0
	// TaskFile is the task file of a task that is not built in, as canonical JSON (the
	// study's task_files entry); the worker runs the task it declares.
	TaskFile json.RawMessage `json:"task_file,omitempty"`
}

// JobEndpoint is where a job's model is served.
type JobEndpoint struct {
	Name                   string  `json:"name"`
	Sim                    bool    `json:"sim,omitempty"`
	BaseURL                string  `json:"base_url,omitempty"`
	APIKeyEnv              string  `json:"api_key_env,omitempty"` // a variable NAME, never a key
	TimeoutSeconds         float64 `json:"timeout_seconds,omitempty"`
	MaxRetries             int     `json:"max_retries,omitempty"`
	UseMaxCompletionTokens bool    `json:"use_max_completion_tokens,omitempty"`
}

// Timeout returns the per-attempt timeout, 0 for the client default.
func (e JobEndpoint) Timeout() time.Duration {
	return time.Duration(e.TimeoutSeconds * float64(time.Second))
}

// MsgID is the Nats-Msg-Id of the job: "<study>/<run>".
func (j *Job) MsgID() string { return j.Study + "/" + j.Run }

// Subject is the job's subject, ditto.jobs.<study>.
func (j *Job) Subject() (string, error) { return events.JobSubject(j.Study) }

// Encode validates the job and returns its JSON.
func (j *Job) Encode() ([]byte, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("study: encode job: %w", err)
	}
	return b, nil
}

// DecodeJob parses and validates a job message. Errors wrap ErrInvalidJob; the returned Job
// holds whatever could be decoded (its Study and Run may be usable to record the failure).
func DecodeJob(data []byte) (Job, error) {
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return j, fmt.Errorf("%w: %v", ErrInvalidJob, err)
	}
	return j, j.Validate()
}

// Validate checks that the job can be run by this build.
func (j *Job) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidJob, fmt.Sprintf(format, args...))
	}
	if j.Version != JobVersion {
		return bad("version %d, this build runs version %d", j.Version, JobVersion)
	}
	if err := events.ValidateToken("study", j.Study); err != nil {
		return bad("%v", err)
	}
	if err := events.ValidateToken("run", j.Run); err != nil {
		return bad("%v", err)
	}
	if j.Run == events.StudyRun {
		return bad("run id %q is reserved", j.Run)
	}
	if err := events.ValidateToken("condition", j.Condition); err != nil {
		return bad("%v", err)
	}
	if msg := checkModelName(j.Model); msg != "" {
		return bad("model: %s", msg)
	}
	t, err := j.TaskDef()
	if err != nil {
		return bad("%v", err)
	}
	if t.Name != j.Task {
		return bad("task_file is task %q, not %q", t.Name, j.Task)
	}
	if j.InputIndex < 0 || j.InputIndex >= len(t.Instances) {
		return bad("input_index %d out of range for task %s (%d instances)", j.InputIndex, j.Task, len(t.Instances))
	}
	if j.SeedIndex < 0 || j.Index < 0 {
		return bad("negative seed_index or index")
	}
	if !slices.IsSorted(j.Components) {
		return bad("components must be sorted")
	}
	if _, err := j.HarnessCondition(); err != nil {
		return bad("%v", err)
	}
	if !j.Endpoint.Sim && j.Endpoint.BaseURL == "" {
		return bad("endpoint %q has neither sim nor base_url", j.Endpoint.Name)
	}
	if j.Endpoint.APIKeyEnv != "" && !isEnvName(j.Endpoint.APIKeyEnv) {
		return bad("endpoint %q: api_key_env is not an environment variable name", j.Endpoint.Name)
	}
	return nil
}

// TaskDef returns the job's task: its task file's, with the tools of servers unbound
// (TaskOfFile), else the registered task.
func (j *Job) TaskDef() (*tasks.Task, error) {
	if len(j.TaskFile) > 0 {
		if len(j.TaskFile) > MaxTaskFileBytes {
			return nil, fmt.Errorf("task_file of %d bytes, more than %d", len(j.TaskFile), MaxTaskFileBytes)
		}
		return TaskOfFile(j.TaskFile)
	}
	return tasks.Get(j.Task)
}

// HarnessCondition rebuilds the condition the job runs under from its components and limits.
func (j *Job) HarnessCondition() (condition.Condition, error) {
	c, err := condition.New(j.Condition, j.Components)
	if err != nil {
		return condition.Condition{}, err
	}
	c.Limits = j.Limits.apply(c.Limits)
	if j.Context != nil {
		if err := j.Context.Validate(); err != nil {
			return condition.Condition{}, err
		}
		c.Context = *j.Context
	}
	return c, nil
}
