package contextmgr

import (
	"encoding/json"
	"fmt"

	"github.com/dittolab/ditto/internal/llm"
)

// RecallToolName is the name of the M2 tool.
const RecallToolName = "recall_event"

// RecallTool is the tool definition the tiers with recall (T2, T4) offer the model.
func RecallTool() llm.ToolDef {
	return llm.ToolDef{
		Name:        RecallToolName,
		Description: "Read again the full body of an earlier tool observation that was elided from the conversation. Pass the id its stub names.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id named in the elided observation's stub"}},"required":["id"],"additionalProperties":false}`),
	}
}

// Store keeps the bodies of elided observations for recall (M2). It belongs to one run.
type Store struct {
	bodies map[string]string
}

func newStore() *Store { return &Store{bodies: map[string]string{}} }

func (s *Store) put(id, body string) { s.bodies[id] = body }

// Recall returns the body elided under id.
func (s *Store) Recall(id string) (string, error) {
	body, ok := s.bodies[id]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrNotStored, id)
	}
	return body, nil
}

// Len returns the number of stored bodies.
func (s *Store) Len() int { return len(s.bodies) }

// ParseRecall reads the arguments of a recall_event call.
func ParseRecall(arguments string) (string, error) {
	var a struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal([]byte(arguments), &a); err != nil {
		return "", fmt.Errorf("contextmgr: %s arguments: %w", RecallToolName, err)
	}
	if a.ID == nil || *a.ID == "" {
		return "", fmt.Errorf("contextmgr: %s arguments: id is missing", RecallToolName)
	}
	return *a.ID, nil
}
