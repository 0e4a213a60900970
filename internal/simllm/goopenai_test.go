package simllm

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dittolab/ditto/internal/tasks"
)

// TestGoOpenAIClient drives the server with go-openai over loopback: model listing, a forced
// tool call, an auto tool call, a structured plan through a json_schema response_format, a
// tool result round trip, and the OpenAI error mapping.
func TestGoOpenAIClient(t *testing.T) {
	srv := httptest.NewServer(mustServer(t, Config{}))
	defer srv.Close()
	cfg := openai.DefaultConfig("not-a-real-key")
	cfg.BaseURL = srv.URL + "/v1"
	cfg.HTTPClient = srv.Client()
	c := openai.NewClientWithConfig(cfg)
	ctx := t.Context()

	models, err := c.ListModels(ctx)
	if err != nil {
		t.Fatalf("ListModels: %v", err)
	}
	if len(models.Models) != 2 || models.Models[0].OwnedBy != OwnedBy {
		t.Errorf("ListModels = %+v, want 2 models owned by %s", models.Models, OwnedBy)
	}

	task, _ := tasks.Get("renal_dosing")
	inst := &task.Instances[0]
	var tools []openai.Tool
	for _, tl := range task.Tools {
		tools = append(tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: tl.Name, Description: tl.Description, Parameters: tl.Schema,
		}})
	}
	seed := 7
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: task.Instructions},
		{Role: openai.ChatMessageRoleUser, Content: inst.Prompt},
	}

	// Structured plan.
	planReq := openai.ChatCompletionRequest{
		Model: "sim-steady", Seed: &seed, Temperature: 1e-45,
		Messages: append(append([]openai.ChatCompletionMessage(nil), msgs...), openai.ChatCompletionMessage{Role: "user", Content: "Return your plan as JSON."}),
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "plan", Schema: planSchema, Strict: true}},
	}
	resp, err := c.CreateChatCompletion(ctx, planReq)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var plan struct {
		Plan []struct {
			State string `json:"state"`
			Tool  string `json:"intended_tool"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &plan); err != nil || len(plan.Plan) == 0 {
		t.Errorf("plan content %q: %v", resp.Choices[0].Message.Content, err)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if resp.SystemFingerprint != "fp_ditto_sim_steady_1" || resp.Model != "sim-steady" {
		t.Errorf("fingerprint %q model %q", resp.SystemFingerprint, resp.Model)
	}

	// Forced tool call, then its result, then an auto turn.
	forced := openai.ChatCompletionRequest{
		Model: "sim-wobbly", Seed: &seed, Messages: msgs, Tools: tools,
		ToolChoice: openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: "load_patient"}},
	}
	resp, err = c.CreateChatCompletion(ctx, forced)
	if err != nil {
		t.Fatalf("forced: %v", err)
	}
	tc := resp.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Name != "load_patient" || tc[0].ID == "" {
		t.Fatalf("forced tool call = %+v, want load_patient", tc)
	}
	tool, _ := task.ToolByName("load_patient")
	out, err := tool.Exec(ctx, inst, json.RawMessage(tc[0].Function.Arguments))
	content := `{"ok":true,"output":` + string(out) + `}`
	if err != nil {
		content = `{"ok":false,"error":"tool_error","detail":"` + err.Error() + `"}`
	}
	msgs = append(msgs, resp.Choices[0].Message, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc[0].ID, Content: content})
	resp, err = c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "sim-steady", Seed: &seed, Messages: msgs, Tools: tools, ToolChoice: "auto", MaxTokens: 500, TopP: 0.9})
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	if tc := resp.Choices[0].Message.ToolCalls; len(tc) != 1 || resp.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Errorf("auto turn after load = %+v, want one tool call", resp.Choices[0])
	}

	// Errors come back as *openai.APIError.
	_, err = c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: msgs})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: error %v, want APIError 400 model_not_found", err)
	}
}
