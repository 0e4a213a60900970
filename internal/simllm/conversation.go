package simllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dittolab/ditto/internal/tasks"
)

// conversation is what a persona understands of the messages of a request.
type conversation struct {
	system []string // system and developer message texts, in order
	users  []string // user message texts, in order
	// results are the tool calls answered by a tool message, in the order of the answers.
	results []tasks.ToolResult
	// called are the names of every tool the assistant called, answered or not.
	called []string
	// lastRole and lastText describe the final message.
	lastRole string
	lastText string
	// textTurns counts assistant messages without tool calls after the last tool message:
	// earlier answers (plans) the harness did not accept, so this request is a repair attempt.
	textTurns int
	// failStreak counts the failed tool results at the end of results.
	failStreak int
}

// parseConversation rebuilds the conversation from the messages, checking the structure OpenAI
// checks: a tool message must answer a tool call of an earlier assistant message.
func parseConversation(msgs []chatMessage) (*conversation, *apiError) {
	c := &conversation{}
	pending := map[string]toolCall{}
	for i, m := range msgs {
		text := string(m.Content)
		switch m.Role {
		case "system", "developer":
			c.system = append(c.system, text)
		case "user":
			c.users = append(c.users, text)
		case "assistant":
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "invalid_value",
						"messages[%d].tool_calls: every tool call needs an id and a function name", i)
				}
				pending[tc.ID] = tc
				c.called = append(c.called, tc.Function.Name)
			}
			if len(m.ToolCalls) == 0 {
				c.textTurns++
			}
		case "tool":
			tc, ok := pending[m.ToolCallID]
			if !ok {
				return nil, badRequest(fmt.Sprintf("messages[%d].tool_call_id", i), "invalid_value",
					"messages[%d]: a message with role 'tool' must answer a tool call of an earlier assistant message (tool_call_id %q is unknown)", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			r := toolResult(tc, text)
			c.results = append(c.results, r)
			if r.Err != "" {
				c.failStreak++
			} else {
				c.failStreak = 0
			}
			c.textTurns = 0
		case "function":
			// Legacy function-calling messages carry nothing a persona uses.
		default:
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value",
				"messages[%d].role = %q, want system, developer, user, assistant or tool", i, m.Role)
		}
	}
	if n := len(msgs); n > 0 {
		c.lastRole = msgs[n-1].Role
		c.lastText = string(msgs[n-1].Content)
	}
	return c, nil
}

// toolResult turns a tool call and the content of its answer into a tasks.ToolResult. The
// harness's envelope is understood ({"ok":true,"output":X} is output X, {"ok":false,...} a
// failure); otherwise content that is not JSON, or a JSON object with an "error" member, is a
// failed call and any other JSON is the output.
func toolResult(tc toolCall, content string) tasks.ToolResult {
	r := tasks.ToolResult{Tool: tc.Function.Name, Args: argsRaw(tc.Function.Arguments)}
	trimmed := bytes.TrimSpace([]byte(content))
	if !json.Valid(trimmed) || len(trimmed) == 0 {
		r.Err = content
		if r.Err == "" {
			r.Err = "empty tool result"
		}
		return r
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(trimmed, &obj) == nil {
		// The harness's envelope: {"ok":true,"output":...} or {"ok":false,"error":...}.
		if okRaw, has := obj["ok"]; has {
			var ok bool
			if json.Unmarshal(okRaw, &ok) == nil {
				if !ok {
					r.Err = errorText(obj)
					return r
				}
				if out, has := obj["output"]; has {
					r.Output = out
					return r
				}
			}
		}
		if e, ok := obj["error"]; ok && !bytes.Equal(e, []byte("null")) && !bytes.Equal(e, []byte("false")) {
			r.Err = errorText(obj)
			return r
		}
	}
	r.Output = json.RawMessage(trimmed)
	return r
}

// errorText summarises a failed tool result object: its "error" and "detail" members.
func errorText(obj map[string]json.RawMessage) string {
	var parts []string
	for _, k := range []string{"error", "detail"} {
		if raw, ok := obj[k]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			if s != "" {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 0 {
		return "error"
	}
	return strings.Join(parts, ": ")
}

// argsRaw returns tool-call arguments as raw JSON, or nil when they are not valid JSON.
func argsRaw(s string) json.RawMessage {
	b := bytes.TrimSpace([]byte(s))
	if !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

// allText is every system and user text, for task recognition.
func (c *conversation) allText() string {
	return strings.Join(c.system, "\n") + "\n" + strings.Join(c.users, "\n")
}
