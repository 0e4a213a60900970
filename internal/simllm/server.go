package simllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/tasks"
)

// OwnedBy is the owned_by of every simulated model in /v1/models, so that anything listing the
// models can tell they are simulated.
const OwnedBy = "ditto-simulated"

// Server is the simulated OpenAI-compatible endpoint. It is an http.Handler serving
// POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}; it is safe for concurrent
// use and keeps no state between requests.
type Server struct {
	personas map[string]*Persona
	names    []string
	tasks    []*tasks.Task
	scale    float64
	created  int64
	maxBody  int64
	mux      *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// NewServer validates cfg, applies its defaults and returns the server.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ps := cfg.Personas
	if ps == nil {
		ps = DefaultPersonas()
	}
	s := &Server{
		personas: map[string]*Persona{},
		tasks:    cfg.Tasks,
		scale:    cfg.LatencyScale,
		created:  cfg.Created.Unix(),
		maxBody:  cfg.MaxBodyBytes,
	}
	if cfg.Created.IsZero() {
		s.created = defaultCreated.Unix()
	}
	if s.maxBody == 0 {
		s.maxBody = 16 << 20
	}
	if s.tasks == nil {
		s.tasks = registeredTasks()
	}
	s.tasks = append(slices.Clip(s.tasks), cfg.Coding...)
	for i := range ps {
		p := ps[i]
		s.personas[p.Name] = &p
		s.names = append(s.names, p.Name)
	}
	sort.Strings(s.names)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("/v1/models", s.handleModels)
	s.mux.HandleFunc("/v1/models/{id}", s.handleModel)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("simllm: unknown path %s; the simulated models serve POST /v1/chat/completions and GET /v1/models", r.URL.Path)})
	})
	return s, nil
}

// Models returns the names of the served personas, sorted.
func (s *Server) Models() []string { return append([]string(nil), s.names...) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r.Method, "GET"))
		return
	}
	list := modelList{Object: "list", Data: []modelObject{}}
	for _, n := range s.names {
		list.Data = append(list.Data, s.modelObject(n))
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r.Method, "GET"))
		return
	}
	id := r.PathValue("id")
	if _, ok := s.personas[id]; !ok {
		writeError(w, s.unknownModel(id, http.StatusNotFound))
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject(id))
}

func (s *Server) modelObject(name string) modelObject {
	return modelObject{ID: name, Object: "model", Created: s.created, OwnedBy: OwnedBy}
}

func (s *Server) unknownModel(name string, status int) *apiError {
	e := badRequest("model", "model_not_found", "unknown model %q; the simulated models are %s", name, strings.Join(s.names, ", "))
	e.Status = status
	return e
}

func methodNotAllowed(got, want string) *apiError {
	return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Message: fmt.Sprintf("simllm: method %s not allowed, use %s", got, want)}
}

// handleChat decodes the body and nothing else of the HTTP request: headers, query and
// unknown body fields never reach a persona.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, methodNotAllowed(r.Method, "POST"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, badRequest("", "request_too_large", "request body larger than %d bytes", s.maxBody))
			return
		}
		writeError(w, badRequest("", "", "read request body: %v", err))
		return
	}
	resp, delay, aerr := s.complete(r.Context(), body)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if delay > 0 {
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return // the client went away; nobody is left to answer
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// complete turns a request body into a response and the time to wait before sending it. It is
// the whole of what the simulated model does: a function of the body bytes.
func (s *Server) complete(ctx context.Context, body []byte) (*chatResponse, time.Duration, *apiError) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, 0, badRequest("", "invalid_json", "request body is not valid JSON for a chat completion: %v", err)
	}
	p, aerr := s.validate(&req)
	if aerr != nil {
		return nil, 0, aerr
	}
	d := newDice(&req)
	a, aerr := respond(ctx, s.tasks, p, &req, d)
	if aerr != nil {
		return nil, 0, aerr
	}
	limit := 0
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil && (limit == 0 || *req.MaxCompletionTokens < limit) {
		limit = *req.MaxCompletionTokens
	}
	a = p.truncate(a, limit)
	prompt, completion := p.promptTokens(&req), p.completionTokens(a)
	if a.finish == "length" && limit > 0 {
		completion = limit
	}
	msg := responseMessage{Role: "assistant"}
	if a.call != nil {
		msg.ToolCalls = []toolCall{{ID: "call_" + d.hex("call-id", 24), Type: "function", Function: *a.call}}
		for i, c := range a.more {
			msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: "call_" + d.hex(labelf("call-id", i+1), 24), Type: "function", Function: c})
		}
		if a.content != "" {
			msg.Content = &a.content
		}
	} else {
		msg.Content = &a.content
	}
	resp := &chatResponse{
		ID:                "chatcmpl-sim" + d.hex("response-id", 26),
		Object:            "chat.completion",
		Created:           s.created,
		Model:             p.Name,
		SystemFingerprint: p.Fingerprint,
		Choices:           []chatChoice{{Index: 0, Message: msg, FinishReason: a.finish}},
		Usage:             usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
	}
	delay := time.Duration(float64(p.latency(d, prompt, completion)) * s.scale)
	return resp, delay, nil
}

// validate checks what OpenAI checks and returns the persona asked for.
func (s *Server) validate(req *chatRequest) (*Persona, *apiError) {
	if req.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "model is required; the simulated models are %s", strings.Join(s.names, ", "))
	}
	p, ok := s.personas[req.Model]
	if !ok {
		return nil, s.unknownModel(req.Model, http.StatusBadRequest)
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages", "missing_required_parameter", "messages must be a non-empty array")
	}
	if req.Stream {
		return nil, badRequest("stream", "unsupported_value", "stream=true is not supported by the simulated models; send stream=false")
	}
	if req.N != nil && *req.N != 1 {
		return nil, badRequest("n", "unsupported_value", "n = %d; the simulated models return exactly one choice", *req.N)
	}
	if t := req.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		return nil, badRequest("temperature", "invalid_value", "temperature = %v, want a value in [0, 2]", *t)
	}
	if tp := req.TopP; tp != nil && (math.IsNaN(*tp) || *tp < 0 || *tp > 1) {
		return nil, badRequest("top_p", "invalid_value", "top_p = %v, want a value in [0, 1]", *tp)
	}
	if m := req.MaxTokens; m != nil && *m < 1 {
		return nil, badRequest("max_tokens", "invalid_value", "max_tokens = %d, want >= 1", *m)
	}
	if m := req.MaxCompletionTokens; m != nil && *m < 1 {
		return nil, badRequest("max_completion_tokens", "invalid_value", "max_completion_tokens = %d, want >= 1", *m)
	}
	names := map[string]bool{}
	for i, t := range req.Tools {
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "invalid_value", "tools[%d] must be {\"type\":\"function\",\"function\":{\"name\":...}}", i)
		}
		if names[t.Function.Name] {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "invalid_value", "duplicate tool name %q", t.Function.Name)
		}
		names[t.Function.Name] = true
		if ps := t.Function.Parameters; len(ps) > 0 {
			if !isJSONObject(ps) {
				return nil, badRequest(fmt.Sprintf("tools[%d].function.parameters", i), "invalid_value", "tools[%d].function.parameters must be a JSON Schema object", i)
			}
		}
	}
	tc, aerr := parseToolChoice(req.ToolChoice, len(req.Tools) > 0)
	if aerr != nil {
		return nil, aerr
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" && len(req.Tools) == 0 && tc.mode != "none" {
		return nil, badRequest("tool_choice", "invalid_value", "tool_choice is only allowed when tools are specified")
	}
	if tc.mode == "named" && !names[tc.name] {
		return nil, badRequest("tool_choice", "invalid_value", "tool_choice names function %q, which is not in tools", tc.name)
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text", "json_object":
		case "json_schema":
			if rf.JSONSchema == nil || rf.JSONSchema.Name == "" {
				return nil, badRequest("response_format.json_schema", "missing_required_parameter", "response_format json_schema needs json_schema.name and json_schema.schema")
			}
			if !isJSONObject(rf.JSONSchema.Schema) {
				return nil, badRequest("response_format.json_schema.schema", "invalid_value", "response_format json_schema.schema must be a JSON Schema object")
			}
		default:
			return nil, badRequest("response_format.type", "invalid_value", "response_format.type = %q, want text, json_object or json_schema", rf.Type)
		}
	}
	return p, nil
}

// isJSONObject reports whether raw, already known to be valid JSON, is an object.
func isJSONObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"message":"simllm: encode response","type":"server_error","param":null,"code":null}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, e *apiError) {
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, struct {
		Error *apiError `json:"error"`
	}{e})
}
