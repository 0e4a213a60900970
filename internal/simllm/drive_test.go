package simllm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

// runOpts is how the in-test driver (a minimal stand-in for the harness) asks.
type runOpts struct {
	forced      bool     // tool_choice names the current state's tool (finite-state + forced tool)
	textPlan    bool     // ask for a free-text plan first
	jsonPlan    bool     // ask for a JSON plan first (response_format json_schema)
	strict      bool     // json_schema strict
	temperature *float64 // nil: omitted
	maxSteps    int
}

// runLog is what happened in one driven run.
type runLog struct {
	calls    []tasks.ToolResult
	plan     string
	final    json.RawMessage // output of the final tool, if it succeeded
	bodies   [][]byte        // every response body
	messages []map[string]any
	// violations counts calls of another tool than the one tool_choice forced.
	violations int
	// planRequestBody is the body of the plan request, when one was made.
	planRequestBody []byte
}

func toolsOf(task *tasks.Task) []map[string]any {
	var out []map[string]any
	for _, tl := range task.Tools {
		out = append(out, map[string]any{"type": "function", "function": map[string]any{
			"name": tl.Name, "description": tl.Description, "parameters": tl.Schema,
		}})
	}
	return out
}

var planSchema = json.RawMessage(`{"type":"object","properties":{"plan":{"type":"array","items":{"type":"object","properties":{"state":{"type":"string"},"intended_tool":{"type":"string"}},"required":["state","intended_tool"],"additionalProperties":false}}},"required":["plan"],"additionalProperties":false}`)

// drive runs one task instance against the server's completion function, executing the tools
// itself, and returns the log. It fails the test on protocol errors only.
func drive(t *testing.T, s *Server, model string, task *tasks.Task, inst *tasks.Instance, seed int64, o runOpts) runLog {
	t.Helper()
	ctx := context.Background()
	var log runLog
	msgs := []map[string]any{
		{"role": "system", "content": task.Instructions},
		{"role": "user", "content": inst.Prompt},
	}
	post := func(extra map[string]any) map[string]any {
		req := map[string]any{"model": model, "messages": msgs, "seed": seed}
		if o.temperature != nil {
			req["temperature"] = *o.temperature
		}
		for k, v := range extra {
			req[k] = v
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		resp, _, aerr := s.complete(ctx, body)
		if aerr != nil {
			t.Fatalf("complete: %v", aerr.Message)
		}
		b, _ := json.Marshal(resp)
		log.bodies = append(log.bodies, b)
		if strings.Contains(string(b), "%!") {
			t.Errorf("response carries a formatting error: %s", b)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	}
	if o.textPlan || o.jsonPlan {
		msgs = append(msgs, map[string]any{"role": "user", "content": "Before calling any tool, give your plan."})
		extra := map[string]any{}
		if o.jsonPlan {
			extra["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "plan", "schema": planSchema, "strict": o.strict}}
		}
		m := post(extra)
		log.plan, _ = m["content"].(string)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": log.plan},
			map[string]any{"role": "user", "content": "Proceed."})
	}
	state, _ := task.StateByName(task.Start)
	steps := o.maxSteps
	if steps == 0 {
		steps = 12
	}
	for range steps {
		extra := map[string]any{"tools": toolsOf(task)}
		if o.forced {
			extra["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": state.Tool}}
		}
		m := post(extra)
		msgs = append(msgs, m)
		tcs, _ := m["tool_calls"].([]any)
		if len(tcs) == 0 {
			break
		}
		tc := tcs[0].(map[string]any)
		fn := tc["function"].(map[string]any)
		name, args := fn["name"].(string), fn["arguments"].(string)
		if o.forced && name != state.Tool {
			log.violations++
		}
		res := tasks.ToolResult{Tool: name, Args: json.RawMessage(args)}
		var content string
		tool, ok := task.ToolByName(name)
		var out json.RawMessage
		var err error
		switch {
		case !ok:
			content = `{"error":"unknown tool"}`
		case !json.Valid([]byte(args)):
			content = `{"error":"arguments are not valid JSON"}`
		default:
			out, err = tool.Exec(ctx, inst, json.RawMessage(args))
			if err != nil {
				b, _ := json.Marshal(map[string]string{"error": err.Error()})
				content = string(b)
			} else {
				content = string(out)
			}
		}
		if err == nil && out != nil {
			res.Output = out
			if name == task.FinalTool {
				log.final = out
			}
			if st, ok := task.StateOfTool(name); ok && o.forced && st.Name == state.Name && len(st.Validate(out)) == 0 {
				if st.Terminal() {
					log.calls = append(log.calls, res)
					break
				}
				next, _ := st.Successor(out)
				state, _ = task.StateByName(next)
			}
		} else {
			res.Err = content
		}
		log.calls = append(log.calls, res)
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": tc["id"], "content": content})
	}
	log.messages = msgs
	return log
}

func mustServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func toolNames(rs []tasks.ToolResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool)
	}
	return out
}
