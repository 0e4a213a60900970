package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Config configures an OpenAI-compatible client.
type Config struct {
	BaseURL string // e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1
	Model   string // default model when a Request names none
	// APIKeyEnv names the environment variable holding the API key; empty for endpoints that
	// need none (local servers). The key itself is never part of a Config.
	APIKeyEnv   string
	Temperature *float64 // default when a Request has none
	TopP        *float64
	Seed        *int64
	MaxTokens   int
	// UseMaxCompletionTokens sends max_completion_tokens instead of max_tokens (newer OpenAI
	// models reject max_tokens; many other servers only know max_tokens).
	UseMaxCompletionTokens bool
	Timeout                time.Duration // per attempt; default 60 s
	MaxRetries             int           // retries after the first attempt; default 3, negative = none
	BackoffBase            time.Duration // first backoff; default 500 ms, doubled per retry
	BackoffMax             time.Duration // default 8 s
	// Sleep waits between attempts; nil means a timer that honours ctx. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// HTTPClient overrides the HTTP client (no client-level timeout is needed: Timeout applies).
	HTTPClient *http.Client
}

func (c *Config) withDefaults() {
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 500 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 8 * time.Second
	}
	if c.Sleep == nil {
		c.Sleep = sleepCtx
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.BaseURL == "":
		return fmt.Errorf("%w: base_url is required", ErrConfig)
	case c.Timeout < 0 || c.BackoffBase < 0 || c.BackoffMax < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	case c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2):
		return fmt.Errorf("%w: temperature must be in [0, 2]", ErrConfig)
	case c.TopP != nil && (*c.TopP <= 0 || *c.TopP > 1):
		return fmt.Errorf("%w: top_p must be in (0, 1]", ErrConfig)
	case c.MaxTokens < 0:
		return fmt.Errorf("%w: max_tokens must not be negative", ErrConfig)
	}
	return nil
}

// OpenAI is a Model talking to an OpenAI-compatible chat-completions endpoint.
type OpenAI struct {
	cfg    Config
	client *openai.Client
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI validates cfg, reads the API key from the environment variable it names, and
// returns a client. A named but unset or empty variable is an error (naming the variable, not
// its value).
func NewOpenAI(cfg Config) (*OpenAI, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.withDefaults()
	key := ""
	if cfg.APIKeyEnv != "" {
		key = os.Getenv(cfg.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%w: environment variable %s is unset or empty", ErrConfig, cfg.APIKeyEnv)
		}
	}
	oc := openai.DefaultConfig(key)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = cfg.HTTPClient
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc)}, nil
}

// Chat implements Model.
func (c *OpenAI) Chat(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	oreq := c.toOpenAI(req)
	var retries []Retry
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		resp, err := c.client.CreateChatCompletion(actx, oreq)
		cancel()
		if err == nil {
			out, cerr := fromOpenAI(resp)
			if cerr != nil {
				return Response{}, &CallError{Attempts: attempt, Retries: retries, Err: cerr}
			}
			out.Latency, out.Retries = time.Since(start), retries
			return out, nil
		}
		status, retryable, reason := classify(ctx, err)
		if !retryable || attempt > c.cfg.MaxRetries {
			return Response{}, &CallError{Attempts: attempt, StatusCode: status, Retryable: retryable, Retries: retries, Err: err}
		}
		backoff := c.backoff(attempt)
		retries = append(retries, Retry{Attempt: attempt, StatusCode: status, Reason: reason, Backoff: backoff})
		if serr := c.cfg.Sleep(ctx, backoff); serr != nil {
			return Response{}, &CallError{Attempts: attempt, StatusCode: status, Retryable: true, Retries: retries, Err: serr}
		}
	}
}

// backoff is deterministic (no jitter): base × 2^(attempt−1), capped. Jitter matters for
// thundering herds of many workers; a bounded deterministic schedule keeps runs replayable.
func (c *OpenAI) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffBase << (attempt - 1)
	if d > c.cfg.BackoffMax || d <= 0 {
		d = c.cfg.BackoffMax
	}
	return d
}

// classify decides whether err is a transient transport failure.
func classify(parent context.Context, err error) (status int, retryable bool, reason string) {
	if parent.Err() != nil { // the caller gave up: never retry
		return 0, false, "cancelled"
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	case errors.Is(err, context.DeadlineExceeded):
		return 0, true, "timeout"
	default:
		return 0, true, "transport error"
	}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests, status >= 500:
		return status, true, fmt.Sprintf("http %d", status)
	case status == 0:
		return 0, true, "transport error"
	}
	return status, false, fmt.Sprintf("http %d", status)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// float32Param converts a sampling parameter for go-openai, whose omitempty tags would drop an
// explicit 0: zero is sent as the smallest positive float32 (the workaround go-openai documents),
// which every server treats as 0.
func float32Param(v *float64) float32 {
	if v == nil {
		return 0
	}
	if *v == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(*v)
}

func (c *OpenAI) toOpenAI(req Request) openai.ChatCompletionRequest {
	o := openai.ChatCompletionRequest{Model: req.Model}
	if o.Model == "" {
		o.Model = c.cfg.Model
	}
	temp, topP, seed, maxTok := req.Temperature, req.TopP, req.Seed, req.MaxTokens
	if temp == nil {
		temp = c.cfg.Temperature
	}
	if topP == nil {
		topP = c.cfg.TopP
	}
	if seed == nil {
		seed = c.cfg.Seed
	}
	if maxTok == 0 {
		maxTok = c.cfg.MaxTokens
	}
	o.Temperature, o.TopP = float32Param(temp), float32Param(topP)
	if seed != nil {
		s := int(*seed)
		o.Seed = &s
	}
	if c.cfg.UseMaxCompletionTokens {
		o.MaxCompletionTokens = maxTok
	} else {
		o.MaxTokens = maxTok
	}
	o.Messages = make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		o.Messages[i] = om
	}
	for _, t := range req.Tools {
		o.Tools = append(o.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if tc := req.ToolChoice; tc != nil {
		if tc.Mode == ToolChoiceFunction {
			o.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: tc.Name}}
		} else {
			o.ToolChoice = tc.Mode
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_schema":
			o.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: rf.Name, Schema: rf.Schema, Strict: rf.Strict}}
		case "json_object":
			o.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		}
	}
	return o
}

func fromOpenAI(r openai.ChatCompletionResponse) (Response, error) {
	if len(r.Choices) == 0 {
		return Response{}, ErrNoChoices
	}
	ch := r.Choices[0]
	out := Response{
		Content:           ch.Message.Content,
		FinishReason:      string(ch.FinishReason),
		Usage:             Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens},
		Model:             r.Model,
		SystemFingerprint: r.SystemFingerprint,
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}
