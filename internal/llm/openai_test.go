package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is a scripted OpenAI-compatible endpoint on loopback: each request gets the next
// status from script (200 answers with a completion), and every request body is kept.
type server struct {
	t      *testing.T
	mu     sync.Mutex
	script []int // HTTP statuses; -1 blocks until the client gives up (timeout)
	bodies []map[string]any
	auth   []string
	srv    *httptest.Server
}

const completion = `{"id":"c1","object":"chat.completion","created":1,"model":"sim-1","system_fingerprint":"fp_sim",
 "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",
   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"load_portfolio","arguments":"{\"path\":\"data/x\"}"}}]}}],
 "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

func newServer(t *testing.T, script ...int) *server {
	s := &server{t: t, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		s.mu.Lock()
		i := len(s.bodies)
		s.bodies = append(s.bodies, m)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		status := http.StatusOK
		if i < len(s.script) {
			status = s.script[i]
		}
		s.mu.Unlock()
		switch status {
		case -1:
			<-r.Context().Done()
		case http.StatusOK:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, completion)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// client builds a client whose backoffs are recorded instead of slept.
func (s *server) client(t *testing.T, mut func(*Config)) (*OpenAI, *[]time.Duration) {
	t.Helper()
	var slept []time.Duration
	cfg := Config{BaseURL: s.srv.URL + "/v1", Model: "sim-1", BackoffBase: 10 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() }}
	if mut != nil {
		mut(&cfg)
	}
	c, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return c, &slept
}

func ptr[T any](v T) *T { return &v }

func TestChatMapsRequestAndResponse(t *testing.T) {
	t.Setenv("DITTO_TEST_KEY", "sk-test-not-a-secret")
	s := newServer(t)
	c, _ := s.client(t, func(c *Config) { c.APIKeyEnv = "DITTO_TEST_KEY"; c.MaxTokens = 256 })
	resp, err := c.Chat(context.Background(), Request{
		Messages: []Message{
			{Role: RoleSystem, Content: "sys"},
			{Role: RoleUser, Content: "hi"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c0", Name: "t", Arguments: `{}`}}},
			{Role: RoleTool, ToolCallID: "c0", Content: `{"ok":true}`},
		},
		Tools:          []ToolDef{{Name: "load_portfolio", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice:     &ToolChoice{Mode: ToolChoiceFunction, Name: "load_portfolio"},
		ResponseFormat: &ResponseFormat{Type: "json_schema", Name: "plan", Schema: json.RawMessage(`{"type":"array"}`)},
		Seed:           ptr(int64(42)),
		Temperature:    ptr(0.0),
		TopP:           ptr(0.9),
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "load_portfolio" || resp.ToolCalls[0].Arguments != `{"path":"data/x"}` ||
		resp.Usage.PromptTokens != 11 || resp.Usage.CompletionTokens != 7 || resp.SystemFingerprint != "fp_sim" ||
		resp.FinishReason != "tool_calls" || resp.Model != "sim-1" || len(resp.Retries) != 0 || resp.Latency <= 0 {
		t.Fatalf("Chat response = %+v", resp)
	}
	if got := s.auth[0]; got != "Bearer sk-test-not-a-secret" {
		t.Errorf("Authorization = %q, want the key from the environment", got)
	}
	b := s.bodies[0]
	if b["model"] != "sim-1" || b["seed"] != 42.0 || b["max_tokens"] != 256.0 || b["top_p"].(float64) < 0.89 {
		t.Errorf("request body = %v", b)
	}
	if temp, ok := b["temperature"].(float64); !ok || temp > 1e-30 {
		t.Errorf("temperature = %v, want an explicit ~0", b["temperature"])
	}
	tc := b["tool_choice"].(map[string]any)
	if tc["type"] != "function" || tc["function"].(map[string]any)["name"] != "load_portfolio" {
		t.Errorf("tool_choice = %v", tc)
	}
	rf := b["response_format"].(map[string]any)
	if rf["type"] != "json_schema" || rf["json_schema"].(map[string]any)["name"] != "plan" {
		t.Errorf("response_format = %v", rf)
	}
	msgs := b["messages"].([]any)
	if len(msgs) != 4 || msgs[3].(map[string]any)["tool_call_id"] != "c0" {
		t.Errorf("messages = %v", msgs)
	}
}

func TestChatRetries(t *testing.T) {
	tests := []struct {
		name        string
		script      []int
		maxRetries  int
		wantErr     bool
		wantReqs    int
		wantRetries []int // status of each recorded retry
	}{
		{"500 then 429 then ok", []int{500, 429, 200}, 3, false, 3, []int{500, 429}},
		{"exhausted", []int{503, 503, 503, 503}, 2, true, 3, []int{503, 503}},
		{"400 is not retried", []int{400}, 3, true, 1, nil},
		{"401 is not retried", []int{401}, 3, true, 1, nil},
		{"timeout then ok", []int{-1, 200}, 3, false, 2, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.script...)
			c, slept := s.client(t, func(c *Config) { c.MaxRetries = tt.maxRetries; c.Timeout = 300 * time.Millisecond })
			resp, err := c.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "x"}}})
			var retries []Retry
			if tt.wantErr {
				var ce *CallError
				if !errors.As(err, &ce) {
					t.Fatalf("Chat error = %v, want *CallError", err)
				}
				retries = ce.Retries
				if ce.Attempts != tt.wantReqs {
					t.Errorf("Attempts = %d, want %d", ce.Attempts, tt.wantReqs)
				}
			} else {
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				retries = resp.Retries
			}
			if got := s.requests(); got != tt.wantReqs {
				t.Errorf("requests = %d, want %d", got, tt.wantReqs)
			}
			if len(retries) != len(tt.wantRetries) || len(*slept) != len(tt.wantRetries) {
				t.Fatalf("retries = %+v, slept %v, want statuses %v", retries, *slept, tt.wantRetries)
			}
			for i, r := range retries {
				if r.StatusCode != tt.wantRetries[i] || r.Attempt != i+1 || r.Backoff != (10*time.Millisecond)<<i || (*slept)[i] != r.Backoff {
					t.Errorf("retry %d = %+v, want status %d and backoff %v", i, r, tt.wantRetries[i], (10*time.Millisecond)<<i)
				}
			}
		})
	}
}

func TestChatCancelledIsNotRetried(t *testing.T) {
	s := newServer(t, -1, 200)
	c, slept := s.client(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for s.requests() == 0 && time.Now().Before(deadline) { // poll until the request arrives
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Chat(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "x"}}})
	if !errors.Is(err, context.Canceled) || len(*slept) != 0 {
		t.Fatalf("Chat after cancel = %v (slept %v), want context.Canceled and no retry", err, *slept)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	const key = "sk-very-secret-value"
	t.Setenv("DITTO_TEST_KEY", key)
	s := newServer(t, 401)
	c, _ := s.client(t, func(c *Config) { c.APIKeyEnv = "DITTO_TEST_KEY" })
	_, err := c.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "x"}}})
	if err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("Chat error = %v: want an error without the key", err)
	}
	t.Setenv("DITTO_EMPTY_KEY", "")
	_, err = NewOpenAI(Config{BaseURL: s.srv.URL, APIKeyEnv: "DITTO_EMPTY_KEY"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "DITTO_EMPTY_KEY") {
		t.Fatalf("NewOpenAI with an empty key variable = %v, want ErrConfig naming the variable", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		give Config
		ok   bool
	}{
		{"ok", Config{BaseURL: "http://127.0.0.1:1/v1"}, true},
		{"no url", Config{}, false},
		{"temperature", Config{BaseURL: "x", Temperature: ptr(3.0)}, false},
		{"top_p", Config{BaseURL: "x", TopP: ptr(0.0)}, false},
		{"negative timeout", Config{BaseURL: "x", Timeout: -1}, false},
	}
	for _, tt := range tests {
		if err := tt.give.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
