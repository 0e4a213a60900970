package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Model is one chat-completion endpoint. Chat sends one request and returns the first choice.
// Implementations must be safe for concurrent use, must not modify req or anything it points
// to, must not retain req or its slices after Chat returns, and return a *CallError (possibly
// wrapping context.Canceled or context.DeadlineExceeded) when no response could be obtained.
type Model interface {
	Chat(ctx context.Context, req Request) (Response, error)
}

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one conversation message.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall // assistant messages only
	ToolCallID string     // tool messages only: the call answered
}

// ToolCall is one function call requested by the model. Arguments are the raw text the model
// produced, which may not even be JSON.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolDef offers a function tool to the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// Tool-choice modes.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function" // force the function named in ToolChoice.Name
)

// ToolChoice constrains which tool the model may call.
type ToolChoice struct {
	Mode string
	Name string // with ToolChoiceFunction
}

// ResponseFormat asks for structured output. Only "json_schema" and "json_object" are sent;
// nil means free text.
type ResponseFormat struct {
	Type   string // "json_schema" or "json_object"
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Request is one chat completion. Zero values mean "the client's configured default": Model,
// Seed, Temperature, TopP and MaxTokens fall back to Config.
type Request struct {
	Model          string
	Messages       []Message
	Tools          []ToolDef
	ToolChoice     *ToolChoice
	ResponseFormat *ResponseFormat
	Seed           *int64
	Temperature    *float64
	TopP           *float64
	MaxTokens      int
}

// Usage counts tokens as reported by the endpoint.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is the first choice of a chat completion.
type Response struct {
	Content           string
	ToolCalls         []ToolCall
	FinishReason      string
	Usage             Usage
	Model             string // as reported by the endpoint
	SystemFingerprint string
	// Latency is the wall time of the whole call, retries and backoff included.
	Latency time.Duration
	// Retries lists the failed attempts that preceded the successful one.
	Retries []Retry
}
