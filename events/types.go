package events

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dittolab/ditto/events/internal/jcs"
)

// Type names an event type. Types are past-tense facts.
type Type string

// Event types.
const (
	TypeStudyDefined    Type = "study.defined"
	TypeRunStarted      Type = "run.started"
	TypeRunFinished     Type = "run.finished"
	TypePlanProposed    Type = "plan.proposed"
	TypePlanAccepted    Type = "plan.accepted"
	TypePlanRejected    Type = "plan.rejected"
	TypeStateEntered    Type = "state.entered"
	TypeStateExited     Type = "state.exited"
	TypeModelCalled     Type = "model.called"
	TypeToolCalled      Type = "tool.called"
	TypeToolRejected    Type = "tool.rejected"
	TypeToolReturned    Type = "tool.returned"
	TypeOutputValidated Type = "output.validated"
	TypeOutputInvalid   Type = "output.invalid"
	TypeRetryScheduled  Type = "retry.scheduled"
	TypeRunEscalated    Type = "run.escalated"
	TypeReportPublished Type = "report.published"
)

// Types lists every known event type, in a fixed order.
func Types() []Type {
	return []Type{
		TypeStudyDefined, TypeRunStarted, TypeRunFinished, TypePlanProposed, TypePlanAccepted,
		TypePlanRejected, TypeStateEntered, TypeStateExited, TypeModelCalled, TypeToolCalled,
		TypeToolRejected, TypeToolReturned, TypeOutputValidated, TypeOutputInvalid,
		TypeRetryScheduled, TypeRunEscalated, TypeReportPublished,
		TypeWorkspaceCreated, TypeWorkspaceDiscarded, TypeVerificationRan, TypeDiagnosticsDistilled, TypeFileChanged,
		TypeContextConfigured, TypeContextPrepared, TypeContextElided, TypeContextRecalled, TypeContextSummarized,
		TypeContextOverflowed, TypePlanUpdated,
	}
}

// Run statuses, as recorded by run.finished. Succeeded, failed, escalated and overflow are the
// agent's behaviour and are scored; errored (infrastructure) and aborted (interrupted) are not.
// Errored and overflow are schema version 2.
const (
	StatusSucceeded = "succeeded" // finished and the ground-truth check passed
	StatusFailed    = "failed"    // finished without a correct output
	StatusEscalated = "escalated" // the harness gave up and escalated to a person
	StatusAborted   = "aborted"   // interrupted (shutdown, crash recovery, cancelled)
	// StatusOverflow: the conversation outgrew the model's context window.
	StatusOverflow = "overflow"
	// StatusErrored: the model or a tool server was never reached or never answered (a
	// missing key, 401/403, an unknown model, a refused connection, timeouts past the retry
	// budget). RunFinished.Cause says which.
	StatusErrored = "errored"
)

// Scored reports whether a run that finished with status counts in the agent metrics: its
// outcome is the agent's behaviour, not the infrastructure's or an interruption.
func Scored(status string) bool {
	switch status {
	case StatusSucceeded, StatusFailed, StatusEscalated, StatusOverflow:
		return true
	}
	return false
}

// Cause kinds: what failed in an errored run.
const (
	CauseMissingKey    = "missing_key"     // the endpoint's API key variable is unset or empty
	CauseUnauthorized  = "unauthorized"    // HTTP 401 or 403
	CauseModelNotFound = "model_not_found" // HTTP 404, or the endpoint does not know the model
	CauseBadRequest    = "bad_request"     // another 4xx: the endpoint refused the request
	CauseUnreachable   = "unreachable"     // connection refused or reset, DNS, TLS
	CauseTimeout       = "timeout"         // no answer within the timeout, retries included
	CauseRateLimited   = "rate_limited"    // HTTP 429 past the retry budget
	CauseServerError   = "server_error"    // HTTP 5xx past the retry budget
	CauseBadResponse   = "bad_response"    // an answer that is not a chat completion
	CauseToolServer    = "tool_server"     // a tool's server was not reached or did not answer
	CauseConfig        = "config"          // the job cannot be run on this worker as configured
	CauseOther         = "other"           // the model's client failed without saying how
)

// Cause is why a run errored: what failed, whether trying again could have helped, and the
// error as it was reported (never a secret). Schema version 2.
type Cause struct {
	Kind string `json:"kind"` // one of the Cause* kinds
	// Permanent says trying again cannot help (a missing key, 401/403, an unknown model): such
	// a run errors at its first attempt, without retries.
	Permanent  bool   `json:"permanent"`
	Endpoint   string `json:"endpoint,omitempty"`    // the endpoint's name or base URL, or the tool
	HTTPStatus int    `json:"http_status,omitempty"` // of the last attempt, when there was an answer
	Attempts   int    `json:"attempts,omitempty"`    // calls made before giving up
	Detail     string `json:"detail"`
}

// String is the cause as one line: "kind: detail".
func (c Cause) String() string { return c.Kind + ": " + c.Detail }

// Tool rejection reasons.
const (
	RejectUnauthorized = "unauthorized" // not the tool authorized in the current state
	RejectSchema       = "schema"       // arguments failed the tool's JSON Schema
	RejectPermission   = "permission"   // touches a resource outside the allowed scope
	RejectBudget       = "budget"       // circuit breaker: repair turns or token budget exhausted
)

// Cell is the matrix a study expands: every task × model × condition, N runs each.
type Cell struct {
	Task      string `json:"task"`
	Model     string `json:"model"`
	Condition string `json:"condition"`
	Runs      int    `json:"runs"`
}

// StudyDefined records a submitted study: its matrix and how many runs to expect.
type StudyDefined struct {
	Name         string          `json:"name"`
	Cells        []Cell          `json:"cells"`
	ExpectedRuns int             `json:"expected_runs"`
	Paired       bool            `json:"paired"`              // runs are paired across conditions (same input and seed index)
	Simulated    []string        `json:"simulated,omitempty"` // models that are simulated
	Spec         json.RawMessage `json:"spec,omitempty"`      // the submitted spec, canonical JSON, secrets removed
}

// Sampling holds the pinned sampling parameters of a run.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
}

// RunStarted is the first event of every run attempt.
type RunStarted struct {
	Task       string   `json:"task"`
	Instance   string   `json:"instance,omitempty"` // input instance id
	InputIndex int      `json:"input_index"`
	SeedIndex  int      `json:"seed_index"`
	Model      string   `json:"model"`
	Condition  string   `json:"condition"`
	Components []string `json:"components"` // harness components switched on, sorted
	Seed       *int64   `json:"seed,omitempty"`
	Sampling   Sampling `json:"sampling"`
	Endpoint   string   `json:"endpoint,omitempty"` // endpoint name or base URL; never a key
	Simulated  bool     `json:"simulated,omitempty"`
	// Start and Graph describe the task's state graph (state → allowed successors) so that
	// the fold can check transitions of runs under finite-state execution.
	Start string              `json:"start,omitempty"`
	Graph map[string][]string `json:"graph,omitempty"`
	// InputKey names the input the run processed, so that production runs of the same input
	// can be compared with each other (an input group). Set by the client; when it is absent,
	// the analyzer derives it from Input (InputKeyOf). Schema version 2.
	InputKey string `json:"input_key,omitempty"`
	// Input is the run's input as the agent received it, canonical JSON (optional; large
	// inputs are better named by InputKey). Schema version 2.
	Input json.RawMessage `json:"input,omitempty"`
}

// Component names recorded in RunStarted.Components.
const (
	ComponentFSM        = "fsm"
	ComponentForcedTool = "forced_tool"
	ComponentValidation = "validation"
	ComponentRetry      = "retry"
	ComponentPlanning   = "structured_planning"
	ComponentSchemaGate = "schema_gate"
	ComponentPermission = "permission_gate"
	ComponentBreaker    = "circuit_breaker"
)

// Totals summarise a run; the analyzer recomputes them from events and they must agree.
type Totals struct {
	PromptTokens      int64   `json:"prompt_tokens"`
	CompletionTokens  int64   `json:"completion_tokens"`
	ModelCalls        int     `json:"model_calls"`
	ToolCalls         int     `json:"tool_calls"`
	Retries           int     `json:"retries"`
	PlanReprompts     int     `json:"plan_reprompts"`
	RejectedToolCalls int     `json:"rejected_tool_calls"`
	LatencyMS         float64 `json:"latency_ms"`
}

// RunFinished is the last event of every run attempt.
type RunFinished struct {
	Status  string          `json:"status"`
	Output  json.RawMessage `json:"output,omitempty"` // canonical JSON; absent when the run produced none
	Success bool            `json:"success"`
	Totals  Totals          `json:"totals"`
	Error   string          `json:"error,omitempty"`
	// Cause is why an errored run errored: set (non-zero) exactly when Status is errored.
	// Schema version 2.
	Cause Cause `json:"cause,omitzero"`
}

// PlanProposed records the plan text a model proposed (raw, as returned).
type PlanProposed struct {
	Text       string `json:"text"`
	Attempt    int    `json:"attempt"`    // 1 for the first proposal, 2.. after re-prompts
	Structured bool   `json:"structured"` // requested as schema-validated JSON
}

// PlanStep is one canonical step of an accepted plan.
type PlanStep struct {
	State string `json:"state"`
	Tool  string `json:"tool"`
}

// PlanAccepted records the canonical plan that passed Structured Planning's validation.
type PlanAccepted struct {
	Steps []PlanStep `json:"steps"`
}

// PlanRejected records a plan that failed validation.
type PlanRejected struct {
	Errors  []string `json:"errors"`
	Attempt int      `json:"attempt"`
}

// StateEntered records entering a state of the task graph.
type StateEntered struct {
	State string `json:"state"`
	From  string `json:"from,omitempty"`
}

// StateExited records leaving a state.
type StateExited struct {
	State   string `json:"state"`
	Outcome string `json:"outcome,omitempty"` // e.g. "ok", "invalid", "escalated"
}

// ModelCalled records one call to the model.
type ModelCalled struct {
	Model            string  `json:"model"`
	Purpose          string  `json:"purpose,omitempty"` // "plan", "act" or "summarize" (PurposeSummarize)
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	LatencyMS        float64 `json:"latency_ms"`
	FinishReason     string  `json:"finish_reason,omitempty"`
	Fingerprint      string  `json:"fingerprint,omitempty"`
	Seed             *int64  `json:"seed,omitempty"`
	TransportRetries int     `json:"transport_retries,omitempty"`
	Error            string  `json:"error,omitempty"`

	// What production traces record of a call beyond the above; all optional (readers that
	// do not know them ignore them). ResponseModel is the model the provider says answered
	// (Model is the one asked for); Temperature and TopP the sampling parameters sent;
	// ToolCallIDs the ids of the tool calls the model asked for, in order (each matches the
	// call_id of a tool.called when the agent executed it); Input and Output the messages
	// sent and the choices returned, canonical JSON, when the instrumentation records content.
	ResponseModel string          `json:"response_model,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	ToolCallIDs   []string        `json:"tool_call_ids,omitempty"`
	Input         json.RawMessage `json:"input,omitempty"`
	Output        json.RawMessage `json:"output,omitempty"`
}

// ToolCalled records a tool call that passed every gate and is executed.
type ToolCalled struct {
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"` // canonical JSON
	State  string          `json:"state,omitempty"`
	// Server is the server that serves the tool; zero for a tool ditto runs in process.
	// Schema version 3.
	Server ToolServer `json:"server,omitzero"`
}

// ToolServer names the server that served a tool call, as the server introduced itself: for
// an MCP server the implementation name and version of its initialization handshake. Schema
// version 3.
type ToolServer struct {
	Name    string `json:"name"`              // the implementation's name (an HTTP tool: its base URL)
	Version string `json:"version,omitempty"` // as the server reports it; "" when it reports none
	// Key is the server's name in the task file; Transport how it is reached: stdio,
	// streamable_http (MCP), http (an endpoint per tool) or fixtures (tables in the task file).
	Key       string `json:"key,omitempty"`
	Transport string `json:"transport,omitempty"`
}

// ToolRejected records a tool call refused before any side effect.
type ToolRejected struct {
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Reason string          `json:"reason"` // RejectUnauthorized, RejectSchema, RejectPermission, RejectBudget
	Detail string          `json:"detail,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"` // canonical JSON when the arguments parsed
	State  string          `json:"state,omitempty"`
}

// ToolReturned records the result of an executed tool call.
type ToolReturned struct {
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	OK         bool            `json:"ok"`
	Output     json.RawMessage `json:"output,omitempty"` // canonical JSON when OK
	Error      string          `json:"error,omitempty"`
	DurationMS float64         `json:"duration_ms"`
	// Server is the server that answered (or failed to), as on tool.called. Schema version 3.
	Server ToolServer `json:"server,omitzero"`
}

// OutputValidated records a state output that passed its validator.
type OutputValidated struct {
	State string `json:"state"`
	Tool  string `json:"tool,omitempty"`
}

// OutputInvalid records a state output that failed its validator.
type OutputInvalid struct {
	State  string   `json:"state"`
	Tool   string   `json:"tool,omitempty"`
	Errors []string `json:"errors"`
}

// RetryScheduled records a bounded retry of a state.
type RetryScheduled struct {
	State   string `json:"state,omitempty"`
	Attempt int    `json:"attempt"` // the retry number, from 1
	Reason  string `json:"reason"`
}

// RunEscalated records that the harness gave up and escalated.
type RunEscalated struct {
	Reason string `json:"reason"`
	State  string `json:"state,omitempty"`
}

// ReportPublished announces a generated report (study-level event).
type ReportPublished struct {
	Name    string   `json:"name"`
	Path    string   `json:"path"`
	Formats []string `json:"formats"`
	Studies []string `json:"studies,omitempty"`
	Alerts  int      `json:"alerts"`
}

// EventType implementations.
func (StudyDefined) EventType() Type    { return TypeStudyDefined }
func (RunStarted) EventType() Type      { return TypeRunStarted }
func (RunFinished) EventType() Type     { return TypeRunFinished }
func (PlanProposed) EventType() Type    { return TypePlanProposed }
func (PlanAccepted) EventType() Type    { return TypePlanAccepted }
func (PlanRejected) EventType() Type    { return TypePlanRejected }
func (StateEntered) EventType() Type    { return TypeStateEntered }
func (StateExited) EventType() Type     { return TypeStateExited }
func (ModelCalled) EventType() Type     { return TypeModelCalled }
func (ToolCalled) EventType() Type      { return TypeToolCalled }
func (ToolRejected) EventType() Type    { return TypeToolRejected }
func (ToolReturned) EventType() Type    { return TypeToolReturned }
func (OutputValidated) EventType() Type { return TypeOutputValidated }
func (OutputInvalid) EventType() Type   { return TypeOutputInvalid }
func (RetryScheduled) EventType() Type  { return TypeRetryScheduled }
func (RunEscalated) EventType() Type    { return TypeRunEscalated }
func (ReportPublished) EventType() Type { return TypeReportPublished }

// Validate implementations: each names the first missing or invalid field.

func (p StudyDefined) Validate() error {
	if p.Name == "" {
		return missing("payload.name")
	}
	if len(p.Cells) == 0 {
		return missing("payload.cells")
	}
	sum := 0
	for i, c := range p.Cells {
		if c.Task == "" || c.Model == "" || c.Condition == "" {
			return invalid("payload.cells", "cell %d needs task, model and condition", i)
		}
		if c.Runs < 1 {
			return invalid("payload.cells", "cell %d has runs %d, want >= 1", i, c.Runs)
		}
		sum += c.Runs
	}
	if p.ExpectedRuns != sum {
		return invalid("payload.expected_runs", "%d, but the cells add up to %d", p.ExpectedRuns, sum)
	}
	return checkCanonical("payload.spec", p.Spec, true)
}

func (p RunStarted) Validate() error {
	switch {
	case p.Task == "":
		return missing("payload.task")
	case p.Model == "":
		return missing("payload.model")
	case p.Condition == "":
		return missing("payload.condition")
	}
	if err := checkCount("payload.input_index", p.InputIndex, 0); err != nil {
		return err
	}
	if err := checkCount("payload.seed_index", p.SeedIndex, 0); err != nil {
		return err
	}
	if !slices.IsSorted(p.Components) {
		return invalid("payload.components", "must be sorted")
	}
	if p.Start != "" && p.Graph != nil {
		if _, ok := p.Graph[p.Start]; !ok {
			return invalid("payload.start", "state %q is not in the graph", p.Start)
		}
	}
	if len(p.InputKey) > 256 {
		return invalid("payload.input_key", "longer than 256 bytes")
	}
	return checkCanonical("payload.input", p.Input, true)
}

func (p RunFinished) Validate() error {
	switch p.Status {
	case StatusSucceeded, StatusFailed, StatusEscalated, StatusAborted, StatusOverflow, StatusErrored:
	case "":
		return missing("payload.status")
	default:
		return invalid("payload.status", "unknown status %q", p.Status)
	}
	if p.Success && p.Status != StatusSucceeded {
		return invalid("payload.success", "true with status %s", p.Status)
	}
	hasCause := p.Cause != (Cause{})
	switch {
	case p.Status == StatusErrored && !hasCause:
		return missing("payload.cause")
	case p.Status != StatusErrored && hasCause:
		return invalid("payload.cause", "only an errored run has a cause (status is %s)", p.Status)
	case hasCause && p.Cause.Kind == "":
		return missing("payload.cause.kind")
	case hasCause && p.Cause.Detail == "":
		return missing("payload.cause.detail")
	case p.Cause.Attempts < 0 || p.Cause.HTTPStatus < 0:
		return invalid("payload.cause", "negative attempts or http_status")
	}
	return checkCanonical("payload.output", p.Output, true)
}

func (p PlanProposed) Validate() error {
	return checkCount("payload.attempt", p.Attempt, 1)
}

func (p PlanAccepted) Validate() error {
	if len(p.Steps) == 0 {
		return missing("payload.steps")
	}
	for i, s := range p.Steps {
		if s.State == "" || s.Tool == "" {
			return invalid("payload.steps", "step %d needs state and tool", i)
		}
	}
	return nil
}

func (p PlanRejected) Validate() error {
	if len(p.Errors) == 0 {
		return missing("payload.errors")
	}
	return checkCount("payload.attempt", p.Attempt, 1)
}

func (p StateEntered) Validate() error {
	if p.State == "" {
		return missing("payload.state")
	}
	return nil
}

func (p StateExited) Validate() error {
	if p.State == "" {
		return missing("payload.state")
	}
	return nil
}

func (p ModelCalled) Validate() error {
	// Tokens are bounded like the counts, so that the fold's and the views' sums of a run's
	// calls cannot overflow 64 bits: 2^31 calls of the most tokens each sum to under 2^62 of
	// prompt and of completion tokens, under 2^63 of both.
	if err := checkCount("payload.prompt_tokens", p.PromptTokens, 0); err != nil {
		return err
	}
	if err := checkCount("payload.completion_tokens", p.CompletionTokens, 0); err != nil {
		return err
	}
	if p.LatencyMS < 0 {
		return invalid("payload.latency_ms", "negative")
	}
	if err := checkCount("payload.transport_retries", p.TransportRetries, 0); err != nil {
		return err
	}
	if err := checkCanonical("payload.input", p.Input, true); err != nil {
		return err
	}
	return checkCanonical("payload.output", p.Output, true)
}

func (p ToolCalled) Validate() error {
	switch {
	case p.CallID == "":
		return missing("payload.call_id")
	case p.Tool == "":
		return missing("payload.tool")
	}
	if err := p.Server.validate(); err != nil {
		return err
	}
	return checkCanonical("payload.args", p.Args, false)
}

// validate checks a server that is named at all: it has a name.
func (s ToolServer) validate() error {
	if s != (ToolServer{}) && s.Name == "" {
		return missing("payload.server.name")
	}
	return nil
}

func (p ToolRejected) Validate() error {
	switch {
	case p.CallID == "":
		return missing("payload.call_id")
	case p.Tool == "":
		return missing("payload.tool")
	}
	switch p.Reason {
	case RejectUnauthorized, RejectSchema, RejectPermission, RejectBudget, RejectTestProtected, RejectUnread:
	case "":
		return missing("payload.reason")
	default:
		return invalid("payload.reason", "unknown reason %q", p.Reason)
	}
	return checkCanonical("payload.args", p.Args, true)
}

func (p ToolReturned) Validate() error {
	switch {
	case p.CallID == "":
		return missing("payload.call_id")
	case p.Tool == "":
		return missing("payload.tool")
	case !p.OK && p.Error == "":
		return missing("payload.error")
	case p.DurationMS < 0:
		return invalid("payload.duration_ms", "negative")
	}
	if err := p.Server.validate(); err != nil {
		return err
	}
	return checkCanonical("payload.output", p.Output, !p.OK)
}

func (p OutputValidated) Validate() error {
	if p.State == "" {
		return missing("payload.state")
	}
	return nil
}

func (p OutputInvalid) Validate() error {
	if p.State == "" {
		return missing("payload.state")
	}
	if len(p.Errors) == 0 {
		return missing("payload.errors")
	}
	return nil
}

func (p RetryScheduled) Validate() error {
	if err := checkCount("payload.attempt", p.Attempt, 1); err != nil {
		return err
	}
	if p.Reason == "" {
		return missing("payload.reason")
	}
	return nil
}

func (p RunEscalated) Validate() error {
	if p.Reason == "" {
		return missing("payload.reason")
	}
	return nil
}

func (p ReportPublished) Validate() error {
	if p.Name == "" {
		return missing("payload.name")
	}
	if p.Path == "" {
		return missing("payload.path")
	}
	return nil
}

// checkCanonical reports an error unless raw is canonical JSON (or absent, when optional).
func checkCanonical(field string, raw json.RawMessage, optional bool) error {
	if len(raw) == 0 {
		if optional {
			return nil
		}
		return missing(field)
	}
	same, err := jcs.IsCanonical(raw)
	if err != nil {
		return &FieldError{Field: field, Err: ErrNotCanonical, Msg: fmt.Errorf("%w: %v", ErrNotCanonical, err).Error()}
	}
	if !same {
		return &FieldError{Field: field, Err: ErrNotCanonical, Msg: "not in RFC 8785 canonical form (use events.Canonical)"}
	}
	return nil
}
