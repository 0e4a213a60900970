package simllm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// apiErrorBody is the OpenAI error shape as a client reads it.
type apiErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func doRequest(t *testing.T, h http.Handler, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func TestBadRequests(t *testing.T) {
	s := mustServer(t, Config{})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tool := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantParam  string
		wantText   string
	}{
		{"malformed JSON", "POST", "/v1/chat/completions", `{"model":`, 400, "", "not valid JSON"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-4o",` + msgs + `}`, 400, "model", `unknown model "gpt-4o"`},
		{"missing model", "POST", "/v1/chat/completions", `{` + msgs + `}`, 400, "model", "model is required"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"sim-steady","messages":[]}`, 400, "messages", "non-empty"},
		{"bad role", "POST", "/v1/chat/completions", `{"model":"sim-steady","messages":[{"role":"robot","content":"x"}]}`, 400, "messages[0].role", "role"},
		{"orphan tool message", "POST", "/v1/chat/completions", `{"model":"sim-steady","messages":[{"role":"tool","tool_call_id":"c1","content":"{}"}]}`, 400, "messages[0].tool_call_id", "must answer a tool call"},
		{"stream", "POST", "/v1/chat/completions", `{"model":"sim-steady","stream":true,` + msgs + `}`, 400, "stream", "not supported"},
		{"n=2", "POST", "/v1/chat/completions", `{"model":"sim-steady","n":2,` + msgs + `}`, 400, "n", "exactly one choice"},
		{"temperature 3", "POST", "/v1/chat/completions", `{"model":"sim-steady","temperature":3,` + msgs + `}`, 400, "temperature", "[0, 2]"},
		{"top_p 2", "POST", "/v1/chat/completions", `{"model":"sim-steady","top_p":2,` + msgs + `}`, 400, "top_p", "[0, 1]"},
		{"max_tokens 0", "POST", "/v1/chat/completions", `{"model":"sim-steady","max_tokens":0,` + msgs + `}`, 400, "max_tokens", ">= 1"},
		{"unknown forced tool", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,` + tool + `,"tool_choice":{"type":"function","function":{"name":"g"}}}`, 400, "tool_choice", `"g"`},
		{"bad tool_choice", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,` + tool + `,"tool_choice":"always"}`, 400, "tool_choice", "always"},
		{"tool_choice without tools", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,"tool_choice":"required"}`, 400, "tool_choice", "only allowed when tools"},
		{"non-function tool", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,"tools":[{"type":"web_search"}]}`, 400, "tools[0]", "function"},
		{"duplicate tool", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, 400, "tools[1].function.name", "duplicate"},
		{"bad response_format", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,"response_format":{"type":"yaml"}}`, 400, "response_format.type", "yaml"},
		{"json_schema without schema", "POST", "/v1/chat/completions", `{"model":"sim-steady",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, 400, "response_format.json_schema.schema", "JSON Schema object"},
		{"content of wrong type", "POST", "/v1/chat/completions", `{"model":"sim-steady","messages":[{"role":"user","content":42}]}`, 400, "", "not valid JSON"},
		{"GET on completions", "GET", "/v1/chat/completions", ``, 405, "", "use POST"},
		{"POST on models", "POST", "/v1/models", `{}`, 405, "", "use GET"},
		{"unknown model id", "GET", "/v1/models/gpt-4o", ``, 404, "model", "unknown model"},
		{"unknown path", "GET", "/v2/anything", ``, 404, "", "unknown path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := doRequest(t, s, tt.method, tt.path, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("%s %s %s: status %d, want %d (body %s)", tt.method, tt.path, tt.body, status, tt.wantStatus, body)
			}
			var e apiErrorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %s is not OpenAI-style JSON: %v", body, err)
			}
			if !strings.HasPrefix(e.Error.Message, "simllm: ") || !strings.Contains(e.Error.Message, tt.wantText) {
				t.Errorf("message %q, want a simllm: message containing %q", e.Error.Message, tt.wantText)
			}
			if e.Error.Type == "" {
				t.Errorf("error type empty in %s", body)
			}
			gotParam := ""
			if e.Error.Param != nil {
				gotParam = *e.Error.Param
			}
			if gotParam != tt.wantParam {
				t.Errorf("param = %q, want %q", gotParam, tt.wantParam)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	s := mustServer(t, Config{MaxBodyBytes: 64})
	status, body := doRequest(t, s, "POST", "/v1/chat/completions", `{"model":"sim-steady","messages":[{"role":"user","content":"`+strings.Repeat("x", 100)+`"}]}`)
	if status != 400 || !strings.Contains(string(body), "larger than 64 bytes") {
		t.Errorf("oversized body: status %d body %s, want 400 naming the limit", status, body)
	}
}

func TestModels(t *testing.T) {
	s := mustServer(t, Config{})
	status, body := doRequest(t, s, "GET", "/v1/models", "")
	if status != 200 {
		t.Fatalf("GET /v1/models: %d %s", status, body)
	}
	var list modelList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		if m.OwnedBy != OwnedBy || m.Object != "model" {
			t.Errorf("model %+v, want object model owned by %s", m, OwnedBy)
		}
	}
	if got, want := strings.Join(ids, ","), "sim-steady,sim-wobbly"; got != want || list.Object != "list" {
		t.Errorf("GET /v1/models = %s %v, want list of %s", list.Object, got, want)
	}
	status, body = doRequest(t, s, "GET", "/v1/models/sim-wobbly", "")
	var one modelObject
	if err := json.Unmarshal(body, &one); status != 200 || err != nil || one.ID != "sim-wobbly" {
		t.Errorf("GET /v1/models/sim-wobbly = %d %s", status, body)
	}
}

func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	base, wait, err := Serve(ctx, "", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Errorf("Serve base URL = %q, want http://127.0.0.1:PORT/v1", base)
	}
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), OwnedBy) {
		t.Errorf("GET %s/models = %d %s", base, resp.StatusCode, b)
	}
	client.CloseIdleConnections()
	cancel()
	if err := wait(); err != nil {
		t.Errorf("wait() = %v, want nil after a clean shutdown", err)
	}
	if err := wait(); err != nil {
		t.Errorf("second wait() = %v, want the same nil", err)
	}
}

func TestServeRejectsNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", ":0"} {
		if _, _, err := Serve(context.Background(), addr, Config{}); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Serve(%q) error %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, _, err := Serve(context.Background(), "127.0.0.1:0", Config{LatencyScale: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Serve with invalid config: error %v, want ErrInvalidConfig", err)
	}
}

// TestLatencyReallyWaits checks the modelled delay is spent before the answer (a lower bound
// only: timers never fire early) and that a client going away ends the wait.
func TestLatencyReallyWaits(t *testing.T) {
	p := DefaultPersonas()[0]
	p.Latency = LatencyModel{BaseMS: 40}
	s := mustServer(t, Config{Personas: []Persona{p}, LatencyScale: 1})
	body := `{"model":"` + p.Name + `","seed":1,"messages":[{"role":"user","content":"hello"}]}`
	start := time.Now()
	status, out := doRequest(t, s, "POST", "/v1/chat/completions", body)
	if status != 200 {
		t.Fatalf("status %d %s", status, out)
	}
	if el := time.Since(start); el < 40*time.Millisecond {
		t.Errorf("response after %v, want at least the modelled 40ms", el)
	}

	p.Latency = LatencyModel{BaseMS: 600_000} // ten minutes: only cancellation can end it
	s = mustServer(t, Config{Personas: []Persona{p}, LatencyScale: 1})
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", strings.NewReader(body))
	done := make(chan struct{})
	go func() {
		s.ServeHTTP(httptest.NewRecorder(), req)
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handler still waiting 10s after the request context was cancelled")
	}
}
