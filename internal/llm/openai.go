package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
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
	key    string // to take out of the endpoint's messages (classify)
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
			return nil, fmt.Errorf("%w: %w: environment variable %s is unset or empty", ErrConfig, ErrMissingKey, cfg.APIKeyEnv)
		}
	}
	oc := openai.DefaultConfig(key)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = cfg.HTTPClient
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc), key: key}, nil
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
				return Response{}, &CallError{Attempts: attempt, Retries: retries, Kind: events.CauseBadResponse,
					Detail: cerr.Error(), Err: cerr}
			}
			out.Latency, out.Retries = time.Since(start), retries
			return out, nil
		}
		f := classify(ctx, err, c.cfg.Timeout, c.key)
		if !f.retryable || attempt > c.cfg.MaxRetries {
			return Response{}, &CallError{Attempts: attempt, StatusCode: f.status, Retryable: f.retryable, Kind: f.kind,
				Detail: f.detail, Retries: retries, Err: err}
		}
		backoff := c.backoff(attempt)
		retries = append(retries, Retry{Attempt: attempt, StatusCode: f.status, Reason: f.reason, Backoff: backoff})
		if serr := c.cfg.Sleep(ctx, backoff); serr != nil {
			return Response{}, &CallError{Attempts: attempt, StatusCode: f.status, Retryable: true, Kind: KindCancelled,
				Detail: "cancelled while waiting to retry: " + serr.Error(), Retries: retries, Err: serr}
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

// failure is what classify makes of a failed attempt.
type failure struct {
	status    int    // HTTP status, 0 without an answer
	retryable bool   // transient: worth another attempt after a backoff
	kind      string // an events.Cause* kind, KindContextLength or KindCancelled
	reason    string // short, for Retry.Reason
	detail    string // for people, never holding the key
}

// classify says what failed and whether it is transient. Permanent: 401/403 (the key), 404 or
// an error code model_not_found (the model), an exhausted quota, a context window exceeded,
// other 4xx. Transient: timeouts, 408, 409, 429, 5xx and failures without an answer (refused
// or reset connections, DNS).
//
// An endpoint that quotes the request's key in its message (echoing the Authorization header)
// gets the key replaced by [redacted] before the message is clipped: clipped first, a key
// across the clip would keep a prefix no later redaction could recognise.
func classify(parent context.Context, err error, timeout time.Duration, key string) failure {
	if parent.Err() != nil { // the caller gave up: never retry
		return failure{kind: KindCancelled, reason: "cancelled", detail: "cancelled: " + parent.Err().Error()}
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var status int
	var code, message string
	switch {
	case errors.As(err, &apiErr):
		status, message = apiErr.HTTPStatusCode, apiErr.Message
		if key != "" {
			message = strings.ReplaceAll(message, key, "[redacted]")
		}
		if s, ok := apiErr.Code.(string); ok {
			code = s
		}
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	case errors.Is(err, context.DeadlineExceeded):
		return failure{retryable: true, kind: events.CauseTimeout, reason: "timeout",
			detail: fmt.Sprintf("no answer within %s", timeout)}
	default:
		return failure{retryable: true, kind: events.CauseUnreachable, reason: "transport error",
			detail: "no answer: " + clip(err.Error(), 300)}
	}
	f := failure{status: status, reason: fmt.Sprintf("http %d", status)}
	said := func(what string) string {
		if message == "" {
			return fmt.Sprintf("%s (HTTP %d)", what, status)
		}
		return fmt.Sprintf("%s (HTTP %d): %s", what, status, clip(message, 300))
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// The message is left out: providers quote part of a wrong key in it.
		f.kind, f.detail = events.CauseUnauthorized, fmt.Sprintf("the endpoint refused the API key (HTTP %d)", status)
	case code == "model_not_found" || status == http.StatusNotFound:
		f.kind, f.detail = events.CauseModelNotFound, said("the endpoint does not serve the model")
	case code == "context_length_exceeded" || strings.Contains(message, "maximum context length"):
		f.kind, f.detail = KindContextLength, said("the conversation exceeds the model's context window")
	case code == "insufficient_quota":
		f.kind, f.detail = events.CauseRateLimited, said("the account's quota is exhausted")
	case status == http.StatusRequestTimeout:
		f.retryable, f.kind, f.detail = true, events.CauseTimeout, said("the endpoint timed out")
	case status == http.StatusTooManyRequests:
		f.retryable, f.kind, f.detail = true, events.CauseRateLimited, said("rate limited")
	case status == http.StatusConflict || status >= 500:
		f.retryable, f.kind, f.detail = true, events.CauseServerError, said("the endpoint failed")
	case status == 0:
		f.retryable, f.kind, f.reason, f.detail = true, events.CauseUnreachable, "transport error", "no answer: "+clip(err.Error(), 300)
	default:
		f.kind, f.detail = events.CauseBadRequest, said("the endpoint refused the request")
	}
	return f
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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
