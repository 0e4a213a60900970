package coding_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// reader is a model that answers summarization requests with a short summary and every other
// request with the next turn of calls made by turn from the request (so a turn can read a
// stub's id). Past its turns it answers with text. It records the agent's requests.
type reader struct {
	mu      sync.Mutex
	turns   []func(req llm.Request) []llm.ToolCall
	reqs    []llm.Request
	summary []llm.Request
}

func (m *reader) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(req.Messages) > 0 && req.Messages[0].Content == contextmgr.SummaryInstruction {
		m.summary = append(m.summary, req)
		return llm.Response{Content: "The agent read stock.go and report.go; the failing test is in report_test.go.",
			FinishReason: "stop", Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 20}}, nil
	}
	m.reqs = append(m.reqs, req)
	n := len(m.reqs) - 1
	if n >= len(m.turns) {
		return llm.Response{Content: "done", FinishReason: "stop", Usage: llm.Usage{PromptTokens: requestTokens(req) - req.MaxTokens, CompletionTokens: 5}}, nil
	}
	calls := m.turns[n](req)
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", n, i)
	}
	// The usage reported is the request's own count, so that the manager's calibration to it
	// (Observe) leaves its estimates as they are.
	return llm.Response{ToolCalls: calls, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: requestTokens(req) - req.MaxTokens, CompletionTokens: 20}}, nil
}

func fixed(calls ...llm.ToolCall) func(llm.Request) []llm.ToolCall {
	return func(llm.Request) []llm.ToolCall { return calls }
}

// reads is a turn of reads of the inventory files: bulky observations.
func reads() func(llm.Request) []llm.ToolCall {
	return fixed(call(coding.ToolRead, map[string]string{"path": "stock.go"}), call(coding.ToolRead, map[string]string{"path": "report.go"}),
		call(coding.ToolRead, map[string]string{"path": "report_test.go"}))
}

var stubID = regexp.MustCompile(`call recall_event with \{"id":"([^"]+)"\}`)

// recallFirstStub recalls the first elided observation the request shows.
func recallFirstStub(req llm.Request) []llm.ToolCall {
	for _, m := range req.Messages {
		if s := stubID.FindStringSubmatch(m.Content); s != nil {
			return []llm.ToolCall{call(contextmgr.RecallToolName, map[string]string{"id": s[1]})}
		}
	}
	return []llm.ToolCall{call(coding.ToolList, map[string]string{})}
}

func runContext(t *testing.T, ctx condition.Context, components []string, model llm.Model) (harness.Result, *recorder) {
	t.Helper()
	cond, err := condition.New("test", components)
	if err != nil {
		t.Fatal(err)
	}
	cond.Context = ctx
	in, _ := repos.Get("inventory", "nil-map")
	spec := harness.RunSpec{Task: tasks.CodingTaskName(in.Repo, in.ID), Condition: cond, Model: "scripted",
		Sampling: events.Sampling{MaxTokens: 256}}
	rec := &recorder{}
	res, err := coding.Run(context.Background(), spec, model, rec, coding.Env{Workspaces: manager(t)})
	if err != nil {
		t.Fatal(err)
	}
	foldOK(t, rec)
	return res, rec
}

func foldOK(t *testing.T, rec *recorder) *events.Run {
	t.Helper()
	h := make([]events.Envelope, len(rec.ps))
	for i, p := range rec.ps {
		h[i] = events.New("s", "r", rec0, p)
		h[i].Seq = int64(i + 1)
		h[i].Source = events.Source{Kind: events.SourceHarness, ID: "w"}
	}
	r, err := events.Fold(h)
	if err != nil {
		t.Fatalf("fold: %v", err)
	}
	return r
}

// requestTokens counts a request as the manager does: messages, tools and the completion
// reserved.
func requestTokens(req llm.Request) int {
	c := contextmgr.BPE()
	n := contextmgr.ToolTokens(c, req.Tools) + req.MaxTokens
	for _, m := range req.Messages {
		n += contextmgr.MessageTokens(c, m)
	}
	return n
}

// TestT0Overflows: without management the conversation grows until a request passes the
// budget; the run ends there with status overflow, and every request sent fitted.
func TestT0Overflows(t *testing.T) {
	m := &reader{turns: []func(llm.Request) []llm.ToolCall{reads(), reads(), reads(), reads(), reads(), reads()}}
	res, rec := runContext(t, condition.Context{Tier: "T0", Budget: 4000}, nil, m)
	if res.Status != events.StatusOverflow || res.Success {
		t.Fatalf("status %s (%s), want overflow", res.Status, res.Error)
	}
	ov := rec.of(events.TypeContextOverflowed)
	if len(ov) != 1 {
		t.Fatalf("context.overflowed %d times, want once", len(ov))
	}
	o := ov[0].(events.ContextOverflowed)
	if o.Tier != "T0" || o.Budget != 4000 || o.Needed <= 4000 || o.Reason != events.OverflowUnmanaged {
		t.Errorf("context.overflowed %+v, want T0 needing more than 4000, unmanaged", o)
	}
	for i, req := range m.reqs {
		if n := requestTokens(req); n > 4000 {
			t.Errorf("request %d costs %d tokens, over the budget 4000", i+1, n)
		}
	}
	// The request that overflowed is the one after the last sent, and would have cost what
	// the event says.
	if o.Turn != len(m.reqs)+1 {
		t.Errorf("overflow at turn %d after %d requests sent", o.Turn, len(m.reqs))
	}
	if len(rec.of(events.TypeContextElided))+len(rec.of(events.TypeContextSummarized)) != 0 {
		t.Error("T0 elided or summarized")
	}
	if !strings.Contains(res.Error, "4000") {
		t.Errorf("error %q, want the budget named", res.Error)
	}
}

// TestManagedTiersNeverOverflow: the same model under T1–T4 at the same budget is never sent a
// request over it, and each tier uses its mechanisms: elision under T1, T2 and T4, summaries
// (each a model.called of purpose summarize) under T3 and T4.
func TestManagedTiersNeverOverflow(t *testing.T) {
	for _, tier := range []string{"T1", "T2", "T3", "T4"} {
		t.Run(tier, func(t *testing.T) {
			m := &reader{turns: []func(llm.Request) []llm.ToolCall{reads(), reads(), reads(), reads(), reads(), reads()}}
			res, rec := runContext(t, condition.Context{Tier: tier, Budget: 4000}, nil, m)
			if res.Status == events.StatusOverflow || len(rec.of(events.TypeContextOverflowed)) != 0 {
				t.Fatalf("status %s (%s): a managed tier overflowed", res.Status, res.Error)
			}
			if len(m.reqs) != 7 {
				t.Errorf("%d requests, want 7 (six turns of reads and the answer)", len(m.reqs))
			}
			for i, req := range m.reqs {
				if n := requestTokens(req); n > 4000 {
					t.Errorf("request %d costs %d tokens, over the budget", i+1, n)
				}
			}
			prepared := rec.of(events.TypeContextPrepared)
			if len(prepared) != len(m.reqs) {
				t.Errorf("%d context.prepared for %d requests", len(prepared), len(m.reqs))
			}
			tr, _ := contextmgr.ParseTier(tier)
			elided, summarized := len(rec.of(events.TypeContextElided)) > 0, len(rec.of(events.TypeContextSummarized)) > 0
			if elided != tr.Elides() || (tr == contextmgr.T3 && !summarized) {
				t.Errorf("elided %v, summarized %v under %s", elided, summarized, tier)
			}
			calls := 0
			for i, p := range rec.ps {
				mc, ok := p.(events.ModelCalled)
				if !ok || mc.Purpose != events.PurposeSummarize {
					continue
				}
				calls++
				if _, ok := rec.ps[i+1].(events.ContextSummarized); !ok {
					t.Errorf("summarization call followed by %s, want context.summarized", rec.ps[i+1].EventType())
				}
			}
			if calls != len(m.summary) || calls != len(rec.of(events.TypeContextSummarized)) {
				t.Errorf("%d summarize model.called, %d summarization requests, %d context.summarized", calls, len(m.summary), len(rec.of(events.TypeContextSummarized)))
			}
			hasRecall := false
			for _, td := range m.reqs[0].Tools {
				hasRecall = hasRecall || td.Name == contextmgr.RecallToolName
			}
			if hasRecall != tr.Recalls() {
				t.Errorf("recall_event offered %v under %s", hasRecall, tier)
			}
		})
	}
}

// heredoc is a turn that rewrites stock.go whole with a bash here-document, as a bash-only
// agent patches: bulky arguments in the model's own message.
func heredoc(req llm.Request) []llm.ToolCall {
	body := "package inventory\n\n" + strings.Repeat("// Stock holds the quantities of each SKU and the reservations made against them.\n", 20)
	return []llm.ToolCall{call(coding.ToolBash, map[string]string{"command": "cat > notes.go <<'EOF'\n" + body + "EOF"})}
}

// TestBashPatchesElided: under T2 a bash agent's stale here-documents are elided from its own
// calls (context.elided names their arguments ids), a recall_event of one gives the
// here-document back, every request fits, and the fold accepts the run. Under T1 at a budget
// below the preamble the overflow says so.
func TestBashPatchesElided(t *testing.T) {
	var argID string
	recallArgs := func(req llm.Request) []llm.ToolCall {
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				if s := regexp.MustCompile(`arguments (\S+) of this bash call elided`).FindStringSubmatch(tc.Arguments); s != nil {
					argID = s[1]
					return []llm.ToolCall{call(contextmgr.RecallToolName, map[string]string{"id": s[1]})}
				}
			}
		}
		return nil
	}
	m := &reader{turns: []func(llm.Request) []llm.ToolCall{heredoc, heredoc, heredoc, heredoc, recallArgs}}
	res, rec := runContext(t, condition.Context{Tier: "T2", Budget: 2200, Recent: 2}, []string{"bash_only"}, m)
	if res.Status == events.StatusOverflow {
		t.Fatalf("status %s (%s)", res.Status, res.Error)
	}
	var args []string
	for _, p := range rec.of(events.TypeContextElided) {
		args = append(args, p.(events.ContextElided).Arguments...)
	}
	if len(args) == 0 || argID == "" || !slices.Contains(args, argID) {
		t.Fatalf("arguments elided %v, the model recalled %q; want here-documents elided and one recalled", args, argID)
	}
	rc := rec.of(events.TypeContextRecalled)
	if len(rc) != 1 || rc[0].(events.ContextRecalled).ID != argID {
		t.Fatalf("context.recalled %v, want %s", rc, argID)
	}
	after := m.reqs[len(m.reqs)-1].Messages
	if got := after[len(after)-1].Content; !strings.Contains(got, "notes.go") || !strings.Contains(got, "Stock holds the quantities") {
		t.Errorf("the recall's observation is %q, want the here-document", clip(got))
	}
	for i, req := range m.reqs {
		if n := requestTokens(req); n > 2200 {
			t.Errorf("request %d costs %d tokens, over the budget", i+1, n)
		}
	}

	m = &reader{turns: []func(llm.Request) []llm.ToolCall{heredoc}}
	res, rec = runContext(t, condition.Context{Tier: "T1", Budget: 300}, []string{"bash_only"}, m)
	ov := rec.of(events.TypeContextOverflowed)
	if res.Status != events.StatusOverflow || len(ov) != 1 {
		t.Fatalf("T1 at 300 tokens: status %s, %d overflows; want the preamble's overflow", res.Status, len(ov))
	}
	if o := ov[0].(events.ContextOverflowed); o.Reason != events.OverflowPreamble || o.Floor <= 300 {
		t.Errorf("context.overflowed %+v, want reason preamble with a floor over 300", o)
	}
}

// TestRecallGivesTheBodyBack: under T2 the model recalls the first stub it sees and gets the
// elided body as the observation; recalling an id never elided is a tool error.
func TestRecallGivesTheBodyBack(t *testing.T) {
	m := &reader{turns: []func(llm.Request) []llm.ToolCall{reads(), reads(), reads(), recallFirstStub,
		fixed(call(contextmgr.RecallToolName, map[string]string{"id": "o999"}))}}
	_, rec := runContext(t, condition.Context{Tier: "T2", Budget: 4000, Recent: 1}, nil, m)
	rc := rec.of(events.TypeContextRecalled)
	if len(rc) != 1 {
		t.Fatalf("context.recalled %d times, want once", len(rc))
	}
	id := rc[0].(events.ContextRecalled).ID
	last := m.reqs[4].Messages
	got := last[len(last)-1]
	if got.Role != llm.RoleTool || !strings.Contains(got.Content, "func ") || strings.Contains(got.Content, "elided") {
		t.Errorf("the observation after recalling %s is %q, want the body", id, clip(got.Content))
	}
	var failed int
	for _, p := range rec.of(events.TypeToolReturned) {
		if r := p.(events.ToolReturned); r.Tool == contextmgr.RecallToolName && !r.OK {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed recalls, want 1 (o999 was never elided)", failed)
	}
}

// TestPlanningAppendsThePlan: the first request ends with the reminder; after update_plan each
// request ends with the plan, once, and the plan is not stored in the conversation.
func TestPlanningAppendsThePlan(t *testing.T) {
	plan := `{"plan":[{"step":"read stock.go","status":"in_progress"},{"step":"fix the nil map","status":"pending"}]}`
	for _, ctx := range []condition.Context{{}, {Tier: "T2", Budget: 6000}} {
		t.Run(ctx.Tier, func(t *testing.T) {
			m := &reader{turns: []func(llm.Request) []llm.ToolCall{
				fixed(llm.ToolCall{Name: contextmgr.PlanToolName, Arguments: plan}),
				fixed(call(coding.ToolRead, map[string]string{"path": "stock.go"})),
				fixed(llm.ToolCall{Name: contextmgr.PlanToolName, Arguments: `{"plan":[]}`}),
			}}
			_, rec := runContext(t, ctx, []string{events.ComponentUpdatePlan}, m)
			first := m.reqs[0].Messages
			if c := first[len(first)-1].Content; c != contextmgr.Reminder {
				t.Errorf("first request ends with %q, want the reminder", clip(c))
			}
			for i, req := range m.reqs[1:] {
				n := 0
				for _, msg := range req.Messages {
					if strings.HasPrefix(msg.Content, "Your current plan") {
						n++
					}
				}
				last := req.Messages[len(req.Messages)-1].Content
				if n != 1 || !strings.Contains(last, "[in_progress] read stock.go") {
					t.Errorf("request %d: %d plan messages, last %q; want the plan once, at the end", i+2, n, clip(last))
				}
			}
			if pu := rec.of(events.TypePlanUpdated); len(pu) != 1 || len(pu[0].(events.PlanUpdated).Steps) != 2 {
				t.Errorf("plan.updated %+v, want one with two steps (the empty plan is refused)", pu)
			}
		})
	}
}

// TestContextConfigRefused: thresholds out of order are a spec error before anything runs.
func TestContextConfigRefused(t *testing.T) {
	cond, _ := condition.New("test", nil)
	cond.Context = condition.Context{Tier: "T4", Budget: 4000, Soft: 100, Recent: 0, Bulky: 0, Hard: 50}
	in, _ := repos.Get("inventory", "nil-map")
	rec := &recorder{}
	_, err := coding.Run(context.Background(), harness.RunSpec{Task: tasks.CodingTaskName(in.Repo, in.ID), Condition: cond, Model: "m"},
		&reader{}, rec, coding.Env{Workspaces: manager(t)})
	if !errors.Is(err, harness.ErrSpec) || !errors.Is(err, coding.ErrContext) || len(rec.ps) != 0 {
		t.Errorf("Run(hard below soft) = %v with %d events, want ErrSpec and ErrContext, nothing emitted", err, len(rec.ps))
	}
}

var rec0 = time.Unix(0, 0)

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
