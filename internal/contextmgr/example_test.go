package contextmgr_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

// A T2 manager elides a bulky observation that has left the recent window and gives it back on
// recall.
func Example() {
	h := contextmgr.NewHistory(contextmgr.BPE(), llm.Message{Role: llm.RoleSystem, Content: "Fix the failing test."})
	call := func(id, tool string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: tool, Arguments: "{}"}}}
	}
	h.Add("a1", call("c1", "read"), "")
	h.Add("o1", llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: strings.Repeat("func f() {}\n", 200)}, "read")
	h.Add("a2", call("c2", "test"), "")
	h.Add("o2", llm.Message{Role: llm.RoleTool, ToolCallID: "c2", Content: "FAIL: ledger_test.go:41"}, "test")

	m, _ := contextmgr.New(contextmgr.Config{Tier: contextmgr.T2, Budget: 4000, Soft: 500, Recent: 1, Bulky: 200}, nil)
	p, _ := m.Prepare(context.Background(), h, 0)
	fmt.Println(p.Elided.IDs, p.Tokens <= 500)
	fmt.Println(p.Messages[2].Content)
	body, _ := m.Recall("o1")
	fmt.Println(len(body))
	// Output:
	// [o1] true
	// [observation o1 from read elided: 804 tokens; call recall_event with {"id":"o1"} to read it]
	// 2400
}
