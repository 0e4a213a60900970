package contextmgr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

func TestParsePlan(t *testing.T) {
	for _, tt := range []struct {
		name, give string
		wantSteps  int
	}{
		{"one step", `{"plan":[{"step":"run the tests","status":"in_progress"}]}`, 1},
		{"with explanation", `{"explanation":"x","plan":[{"step":"a","status":"completed"},{"step":"b","status":"pending"}]}`, 2},
		{"empty plan", `{"plan":[]}`, 0},
		{"no plan", `{}`, 0},
		{"two in progress", `{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"in_progress"}]}`, 0},
		{"bad status", `{"plan":[{"step":"a","status":"done"}]}`, 0},
		{"blank step", `{"plan":[{"step":"  ","status":"pending"}]}`, 0},
		{"unknown field", `{"plan":[{"step":"a","status":"pending"}],"note":1}`, 0},
		{"not json", `plan: a`, 0},
		{"trailing bracket", `{"plan":[{"step":"a","status":"pending"}]}]`, 0},
		{"trailing object", `{"plan":[{"step":"a","status":"pending"}]} {}`, 0},
		{"too long", `{"plan":[` + strings.Repeat(`{"step":"a","status":"pending"},`, 20) + `{"step":"a","status":"pending"}]}`, 0},
	} {
		p, err := contextmgr.ParsePlan(tt.give)
		if tt.wantSteps == 0 {
			if !errors.Is(err, contextmgr.ErrPlan) {
				t.Errorf("%s: ParsePlan(%.40q) = %v, want ErrPlan", tt.name, tt.give, err)
			}
			continue
		}
		if err != nil || len(p.Steps) != tt.wantSteps {
			t.Errorf("%s: ParsePlan(%.40q) = %d steps, %v; want %d", tt.name, tt.give, len(p.Steps), err, tt.wantSteps)
		}
	}
}

// The reminder comes on the first turn only while there is no plan; the plan is appended to
// every request after a valid update and is never part of the history.
func TestPlannerAppendsNotStores(t *testing.T) {
	var pl contextmgr.Planner
	if m, ok := pl.Appended(true); !ok || m.Content != contextmgr.Reminder {
		t.Errorf("first turn without a plan: %q, %v; want the reminder", m.Content, ok)
	}
	if _, ok := pl.Appended(false); ok {
		t.Error("later turn without a plan: something appended, want nothing")
	}
	h := contextmgr.NewHistory(contextmgr.BPE(), llm.Message{Role: llm.RoleSystem, Content: "s"})
	before := h.Tokens()
	if _, err := pl.Update(`{"plan":[{"step":"read ledger.go","status":"completed"},{"step":"fix the slice bound","status":"in_progress"}]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Update(`{"plan":[]}`); err == nil {
		t.Error("Update(empty plan) accepted")
	}
	m, ok := pl.Appended(false)
	if !ok || !strings.Contains(m.Content, "1. [completed] read ledger.go") || !strings.Contains(m.Content, "2. [in_progress] fix the slice bound") {
		t.Errorf("appended %q, want the current plan", m.Content)
	}
	if h.Tokens() != before || len(h.Messages()) != 1 || pl.Updates() != 1 {
		t.Errorf("history %d tokens (was %d), %d messages, %d updates: want the plan outside it and one valid update", h.Tokens(), before, len(h.Messages()), pl.Updates())
	}
	if tool := contextmgr.PlanTool(); tool.Name != contextmgr.PlanToolName || !strings.Contains(string(tool.Parameters), `"in_progress"`) {
		t.Errorf("PlanTool() = %+v", tool)
	}
}
