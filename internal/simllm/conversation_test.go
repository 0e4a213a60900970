package simllm

import (
	"encoding/json"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

func TestToolResult(t *testing.T) {
	tc := toolCall{ID: "c", Type: "function", Function: functionCall{Name: "f", Arguments: `{"a":1}`}}
	tests := []struct {
		name       string
		give       string
		wantOutput string
		wantErr    string
	}{
		{"harness success", `{"ok":true,"output":{"x":1}}`, `{"x":1}`, ""},
		{"harness failure", `{"ok":false,"error":"schema","detail":"path is required"}`, "", "schema: path is required"},
		{"plain output", `{"x":1}`, `{"x":1}`, ""},
		{"plain array", `[1,2]`, `[1,2]`, ""},
		{"error object", `{"error":"not found"}`, "", "not found"},
		{"null error is not an error", `{"error":null,"x":1}`, `{"error":null,"x":1}`, ""},
		{"text", `tool exploded`, "", "tool exploded"},
		{"empty", ``, "", "empty tool result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := toolResult(tc, tt.give)
			if string(r.Output) != tt.wantOutput || r.Err != tt.wantErr || r.Tool != "f" || string(r.Args) != `{"a":1}` {
				t.Errorf("toolResult(%q) = %+v (output %s), want output %s err %q", tt.give, r, r.Output, tt.wantOutput, tt.wantErr)
			}
		})
	}
}

func TestParseConversation(t *testing.T) {
	call := func(id, name string) chatMessage {
		return chatMessage{Role: "assistant", ToolCalls: []toolCall{{ID: id, Type: "function", Function: functionCall{Name: name, Arguments: "{}"}}}}
	}
	msgs := []chatMessage{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "task"},
		{Role: "assistant", Content: "my plan"},
		{Role: "user", Content: "go"},
		call("1", "a"),
		{Role: "tool", ToolCallID: "1", Content: `{"ok":false,"error":"schema"}`},
		call("2", "a"),
		{Role: "tool", ToolCallID: "2", Content: `{"ok":false,"error":"permission"}`},
		call("3", "b"),
	}
	c, aerr := parseConversation(msgs)
	if aerr != nil {
		t.Fatal(aerr.Message)
	}
	if len(c.results) != 2 || c.failStreak != 2 || c.textTurns != 0 || len(c.called) != 3 || c.lastRole != "assistant" {
		t.Errorf("parseConversation = %+v", c)
	}
	if _, aerr := parseConversation(append(msgs, chatMessage{Role: "tool", ToolCallID: "1", Content: "{}"})); aerr == nil {
		t.Error("a second answer to tool call 1 was accepted")
	}
}

func TestRecognise(t *testing.T) {
	ts := allTasks(t)
	credit, _ := tasks.Get("credit_ecl")
	renal, _ := tasks.Get("renal_dosing")
	tests := []struct {
		name     string
		system   string
		user     string
		tools    []string
		wantTask string
		wantInst string
	}{
		{"instructions only", credit.Instructions, "go", nil, "credit_ecl", ""},
		{"instance prompt only", "", renal.Instances[1].Prompt, nil, "renal_dosing", renal.Instances[1].ID},
		{"tools only", "", "do it", []string{"load_portfolio", "calculate_ecl"}, "credit_ecl", ""},
		{"task name", "You are working on renal_dosing.", "", nil, "renal_dosing", ""},
		{"prompt beats foreign tools", "", credit.Instances[0].Prompt + " Please.", []string{"load_patient"}, "credit_ecl", credit.Instances[0].ID},
		{"nothing known", "You are helpful.", "Tell me a joke.", []string{"get_weather"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conversation{system: []string{tt.system}, users: []string{tt.user}}
			r := recognise(ts, c, tt.tools)
			gotTask, gotInst := "", ""
			if r.task != nil {
				gotTask = r.task.Name
			}
			if r.inst != nil {
				gotInst = r.inst.ID
			}
			if gotTask != tt.wantTask || gotInst != tt.wantInst {
				t.Errorf("recognise = %q/%q, want %q/%q", gotTask, gotInst, tt.wantTask, tt.wantInst)
			}
		})
	}
}

// TestUnknownTask: a request about nothing the personas know still gets a well-formed answer:
// a call with arguments that satisfy the tool's schema when a tool may be called (the persona
// acts on the request: see generic.go), text when none may.
func TestUnknownTask(t *testing.T) {
	s := mustServer(t, Config{Personas: []Persona{exactPersona()}})
	params := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1},"units":{"enum":["C","F"]}},"required":["city","days","units"],"additionalProperties":false}`)
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": params}}}
	msgs := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	for _, choice := range []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, "required", "auto", "none"} {
		b, _ := json.Marshal(map[string]any{"model": "sim-exact", "seed": 1, "messages": msgs, "tools": tools, "tool_choice": choice})
		resp, _, aerr := s.complete(t.Context(), b)
		if aerr != nil {
			t.Fatal(aerr.Message)
		}
		m := resp.Choices[0].Message
		switch choice.(type) {
		case map[string]any:
			if len(m.ToolCalls) != 1 || !valid(validatorFor(params), canonicalText(m.ToolCalls[0].Function.Arguments)) {
				t.Errorf("tool_choice %v: %+v, want a schema-valid get_weather call", choice, m)
			}
		default:
			if (choice == "required" || choice == "auto") && (len(m.ToolCalls) != 1 || !valid(validatorFor(params), canonicalText(m.ToolCalls[0].Function.Arguments))) {
				t.Errorf("tool_choice %v: %+v, want a schema-valid call", choice, m)
			}
			if choice == "none" && (m.Content == nil || *m.Content == "" || len(m.ToolCalls) != 0) {
				t.Errorf("tool_choice %v: %+v, want text", choice, m)
			}
		}
	}
}

func TestUsageAndMaxTokens(t *testing.T) {
	s := mustServer(t, Config{})
	task, _ := tasks.Get("credit_ecl")
	complete := func(extra map[string]any, userText string) *chatResponse {
		req := map[string]any{"model": "sim-steady", "seed": 3, "messages": []map[string]any{
			{"role": "system", "content": task.Instructions}, {"role": "user", "content": userText}}}
		for k, v := range extra {
			req[k] = v
		}
		b, _ := json.Marshal(req)
		resp, _, aerr := s.complete(t.Context(), b)
		if aerr != nil {
			t.Fatal(aerr.Message)
		}
		return resp
	}
	short := complete(nil, "Describe your plan.")
	long := complete(nil, "Describe your plan. "+task.Instances[0].Prompt+" "+task.Instructions)
	if !(short.Usage.PromptTokens < long.Usage.PromptTokens) || short.Usage.CompletionTokens < 10 {
		t.Errorf("usage short %+v long %+v: want prompt tokens to grow with the request", short.Usage, long.Usage)
	}
	withTools := complete(map[string]any{"tools": toolsOf(task)}, task.Instances[0].Prompt)
	if withTools.Usage.PromptTokens <= short.Usage.PromptTokens+100 {
		t.Errorf("tool schemas add too few prompt tokens: %+v", withTools.Usage)
	}
	cut := complete(map[string]any{"max_tokens": 5}, "Describe your plan.")
	c := cut.Choices[0]
	if c.FinishReason != "length" || cut.Usage.CompletionTokens != 5 || len([]rune(*c.Message.Content)) > 20 {
		t.Errorf("max_tokens 5: finish %q usage %+v content %q", c.FinishReason, cut.Usage, *c.Message.Content)
	}
}
