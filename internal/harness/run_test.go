package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

func cond(t *testing.T, name string) condition.Condition {
	t.Helper()
	c, err := condition.Parse(name)
	if err != nil {
		t.Fatalf("ParseCondition(%q): %v", name, err)
	}
	return c
}

func spec(t *testing.T, task, condition string, instance int) harness.RunSpec {
	seed := int64(7)
	return harness.RunSpec{Task: task, Instance: instance, Condition: cond(t, condition), Model: "scripted", Seed: &seed}
}

// run executes a run and checks, for every run, that its history folds and agrees with the
// Result: what the analysis will see is what the harness did.
func run(t *testing.T, s harness.RunSpec, m llm.Model) (harness.Result, *harnesstest.Recorder) {
	t.Helper()
	rec := harnesstest.NewRecorder()
	res, err := harness.Run(context.Background(), s, m, rec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkFold(t, rec, res)
	return res, rec
}

func checkFold(t *testing.T, rec *harnesstest.Recorder, res harness.Result) {
	t.Helper()
	f, err := rec.Fold()
	if err != nil {
		t.Fatalf("fold: %v\nevents: %v", err, rec.Types())
	}
	if !f.Done() || f.Finished.Status != res.Status || f.Finished.Success != res.Success {
		t.Fatalf("fold finished = %+v, result status %s", f.Finished, res.Status)
	}
	if string(f.Output) != string(res.Output) || f.Plan != res.Plan || !slices.Equal(f.Tools, res.Tools) || !slices.Equal(f.States, res.States) {
		t.Fatalf("fold (output %s, plan %q, tools %v, states %v) != result (output %s, plan %q, tools %v, states %v)",
			f.Output, f.Plan, f.Tools, f.States, res.Output, res.Plan, res.Tools, res.States)
	}
	tot := res.Totals
	if f.ModelCalls != tot.ModelCalls || f.PromptTokens != tot.PromptTokens || f.CompletionTokens != tot.CompletionTokens ||
		f.Retries != tot.Retries || f.PlanReprompts != tot.PlanReprompts || f.RejectedToolCalls != tot.RejectedToolCalls ||
		len(f.Calls) != tot.ToolCalls || f.Escalated != (res.Status == events.StatusEscalated) {
		t.Fatalf("fold counters %+v disagree with totals %+v", f, tot)
	}
	if res.Success != (res.Status == events.StatusSucceeded) {
		t.Fatalf("success %v with status %s", res.Success, res.Status)
	}
}

func TestIdealSucceedsEverywhere(t *testing.T) {
	conditions := []string{"baseline", "harness", "harness_sp", "fsm", "forced_tool", "validation", "retry",
		"structured_planning", "schema_gate", "permission_gate", "circuit_breaker", "harness-retry"}
	for _, name := range []string{"aml_screening", "credit_ecl", "renal_dosing"} {
		task, _ := tasks.Get(name)
		for i := range task.Instances {
			for _, c := range conditions {
				if testing.Short() && i > 0 && c != "harness_sp" {
					continue
				}
				res, _ := run(t, spec(t, name, c, i), harnesstest.IdealModel(task))
				if res.Status != events.StatusSucceeded || res.Output == nil {
					t.Errorf("%s/%d under %s: status %s (%s), want succeeded", name, i, c, res.Status, res.Error)
				}
			}
		}
	}
}

func TestBranchingTaskTakesBothBranchesUnderFSM(t *testing.T) {
	task, _ := tasks.Get("aml_screening")
	seen := map[bool]bool{}
	for i := range task.Instances {
		res, _ := run(t, spec(t, "aml_screening", "harness_sp", i), harnesstest.IdealModel(task))
		review := slices.Contains(res.States, "ENHANCED_REVIEW")
		seen[review] = true
		want := []string{"LOAD_DATA", "SCREEN", "GENERATE_REPORT"}
		if review {
			want = []string{"LOAD_DATA", "SCREEN", "ENHANCED_REVIEW", "GENERATE_REPORT"}
		}
		if !slices.Equal(res.States, want) || !res.Success {
			t.Errorf("%s: states %v success %v", task.Instances[i].ID, res.States, res.Success)
		}
	}
	if !seen[true] || !seen[false] {
		t.Fatalf("branches taken: %v, want both", seen)
	}
}

func TestBaselineOffersAllToolsWithAutoChoice(t *testing.T) {
	task, _ := tasks.Get("credit_ecl")
	m := harnesstest.IdealModel(task)
	res, rec := run(t, spec(t, "credit_ecl", "baseline", 0), m)
	if !res.Success {
		t.Fatalf("baseline ideal run failed: %s", res.Error)
	}
	plan := m.Requests[0]
	if len(plan.Tools) != 0 || plan.ResponseFormat != nil {
		t.Errorf("plan request offers %d tools, format %v; want a free-text plan request", len(plan.Tools), plan.ResponseFormat)
	}
	for i, req := range m.Requests[1:] {
		if len(req.Tools) != len(task.Tools) || req.ToolChoice == nil || req.ToolChoice.Mode != llm.ToolChoiceAuto {
			t.Errorf("act request %d: %d tools, choice %+v; want all %d tools with auto", i, len(req.Tools), req.ToolChoice, len(task.Tools))
		}
		if req.Seed == nil || *req.Seed != 7 || req.Model != "scripted" {
			t.Errorf("act request %d: seed/model not pinned", i)
		}
	}
	if got := rec.Payloads(events.TypePlanProposed); len(got) != 1 || got[0].(events.PlanProposed).Structured {
		t.Errorf("plan events = %v, want one free-text proposal", got)
	}
	if rec.Count(events.TypePlanAccepted) != 0 || rec.Count(events.TypeOutputValidated) != 0 || rec.Count(events.TypeRetryScheduled) != 0 {
		t.Errorf("baseline emitted harness activity: %v", rec.Types())
	}
	started := rec.Payloads(events.TypeRunStarted)[0].(events.RunStarted)
	if len(started.Components) != 0 || started.Condition != "baseline" || started.Graph == nil {
		t.Errorf("run.started = %+v", started)
	}
}

func TestBaselineStopsAtStepCap(t *testing.T) {
	c := cond(t, "baseline")
	c.Limits.MaxSteps = 4
	s := spec(t, spyTask, "baseline", 0)
	s.Condition = c
	registerSpy()
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan")}, Then: harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`)}
	res, _ := run(t, s, m)
	if m.Calls() != 1+4 || res.Status != events.StatusFailed || res.Output != nil {
		t.Fatalf("calls %d status %s output %s; want 5 calls, failed, no output", m.Calls(), res.Status, res.Output)
	}
}

func TestForcedToolCannotBeBypassed(t *testing.T) {
	registerSpy()
	for _, c := range []string{"forced_tool", "harness"} {
		t.Run(c, func(t *testing.T) {
			resetSpy()
			// The model insists on the final tool while the state authorizes only first_tool.
			m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan")},
				Then: harnesstest.Call("final_tool", `{"path":"data/spy/ok"}`)}
			res, rec := run(t, spec(t, spyTask, c, 0), m)
			if n := spyExecs("final_tool"); n != 0 {
				t.Fatalf("final_tool executed %d times, want 0", n)
			}
			if rec.Count(events.TypeToolCalled) != 0 || rec.Count(events.TypeToolRejected) == 0 {
				t.Fatalf("events %v: want rejections and no tool.called", rec.Types())
			}
			for _, p := range rec.Payloads(events.TypeToolRejected) {
				if p.(events.ToolRejected).Reason != events.RejectUnauthorized {
					t.Fatalf("rejection %+v, want unauthorized", p)
				}
			}
			for i, req := range m.Requests[1:] {
				if len(req.Tools) != 1 || req.Tools[0].Name != "first_tool" || req.ToolChoice.Mode != llm.ToolChoiceFunction || req.ToolChoice.Name != "first_tool" {
					t.Fatalf("request %d offers %v with choice %+v; want only first_tool, forced", i, req.Tools, req.ToolChoice)
				}
			}
			if res.Success || res.Output != nil {
				t.Fatalf("result %+v, want no output", res)
			}
			if c == "harness" && (res.Status != events.StatusEscalated || res.EscalationReason != "retries_exhausted") {
				t.Fatalf("harness: status %s (%s), want escalated after retries", res.Status, res.EscalationReason)
			}
		})
	}
}

func TestFSMAlone(t *testing.T) {
	registerSpy()
	resetSpy()
	c := cond(t, "fsm")
	c.Limits.MaxSteps = 6
	s := spec(t, spyTask, "fsm", 0)
	s.Condition = c
	m := &harnesstest.Script{Turns: []harnesstest.Turn{
		harnesstest.Text("plan"),
		harnesstest.Text("I think we are done."),                 // no tool call: re-prompted
		harnesstest.Call("final_tool", `{"path":"data/spy/ok"}`), // out of order: rejected
		harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`),
		harnesstest.Call("final_tool", `{"path":"data/spy/ok"}`),
	}}
	res, rec := run(t, s, m)
	if !res.Success || !slices.Equal(res.States, []string{"FIRST", "SECOND"}) || spyExecs("final_tool") != 1 {
		t.Fatalf("result %+v (final_tool execs %d)", res, spyExecs("final_tool"))
	}
	if len(m.Requests[1].Tools) != 2 || m.Requests[1].ToolChoice.Mode != llm.ToolChoiceAuto {
		t.Errorf("fsm alone must offer every tool with auto, got %+v", m.Requests[1].ToolChoice)
	}
	last := m.Requests[2].Messages[len(m.Requests[2].Messages)-1]
	if last.Role != llm.RoleUser || !strings.Contains(last.Content, "first_tool") {
		t.Errorf("after a turn without a tool call the model must be told the state's tool, got %+v", last)
	}
	if rec.Count(events.TypeToolRejected) != 1 || rec.Count(events.TypeRetryScheduled) != 0 {
		t.Errorf("events %v", rec.Types())
	}
}

func TestInvalidPlanIsRepromptedUpToTheBound(t *testing.T) {
	task, _ := tasks.Get("credit_ecl")
	bad := `[{"state":"LOAD_DATA","intended_tool":"load_portfolio"},{"state":"CALCULATE","intended_tool":"calculate_ecl"}]`
	for _, bound := range []int{2, 1, 3} {
		c := cond(t, "harness_sp")
		c.Limits.MaxPlanReprompts = bound
		s := spec(t, "credit_ecl", "harness_sp", 0)
		s.Condition = c
		m := &harnesstest.Script{Then: harnesstest.Text(bad)}
		res, rec := run(t, s, m)
		if m.Calls() != bound+1 || rec.Count(events.TypePlanRejected) != bound+1 || res.Status != events.StatusEscalated ||
			res.EscalationReason != "plan_rejected" || rec.Count(events.TypeToolCalled) != 0 || rec.Count(events.TypeStateEntered) != 0 {
			t.Fatalf("bound %d: %d calls, %d rejections, status %s (%s), events %v", bound, m.Calls(),
				rec.Count(events.TypePlanRejected), res.Status, res.EscalationReason, rec.Types())
		}
		for _, req := range m.Requests {
			if req.ResponseFormat == nil || req.ResponseFormat.Type != "json_schema" || len(req.Tools) != 0 {
				t.Fatalf("plan request without json_schema or with tools: %+v", req)
			}
		}
		// The re-prompt carries the errors.
		if bound >= 1 {
			msgs := m.Requests[1].Messages
			if last := msgs[len(msgs)-1].Content; !strings.Contains(last, "no transition LOAD_DATA → CALCULATE") {
				t.Fatalf("re-prompt %q lacks the plan errors", last)
			}
		}
		if res.Plan != bad {
			t.Fatalf("plan of an escalated run = %q, want the last proposal", res.Plan)
		}
	}
	// A plan fixed after one rejection is accepted; only the canonical steps are recorded.
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("```json\nnot a plan"), harnesstest.Text(" " + harnesstest.IdealPlan(task) + "\n")},
		Then: harnesstest.Ideal(task)}
	res, rec := run(t, spec(t, "credit_ecl", "harness_sp", 0), m)
	want := `[{"state":"LOAD_DATA","tool":"load_portfolio"},{"state":"VALIDATE_DATA","tool":"validate_portfolio"},{"state":"CALCULATE","tool":"calculate_ecl"},{"state":"GENERATE_REPORT","tool":"generate_ecl_report"}]`
	if !res.Success || res.Plan != want || rec.Count(events.TypePlanRejected) != 1 || rec.Count(events.TypePlanAccepted) != 1 {
		t.Fatalf("success %v plan %s rejections %d", res.Success, res.Plan, rec.Count(events.TypePlanRejected))
	}
}

func TestNoToolRunsBeforeAValidPlan(t *testing.T) {
	registerSpy()
	resetSpy()
	m := &harnesstest.Script{Then: harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`)}
	res, rec := run(t, spec(t, spyTask, "structured_planning", 0), m)
	if spyExecs("first_tool") != 0 || res.Status != events.StatusEscalated || rec.Count(events.TypeToolRejected) != 3 {
		t.Fatalf("execs %d status %s events %v", spyExecs("first_tool"), res.Status, rec.Types())
	}
}

func TestSchemaGate(t *testing.T) {
	registerSpy()
	bad := []string{`{"path":"data/spy/ok","limit":"two"}`, `{"path":"data/spy/ok","extra":1}`, `{}`, `not json`}
	for _, args := range bad {
		resetSpy()
		c := cond(t, "schema_gate")
		c.Limits.MaxSteps = 1
		s := spec(t, spyTask, "schema_gate", 0)
		s.Condition = c
		m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", args)}}
		_, rec := run(t, s, m)
		if spyExecs("first_tool") != 0 || rec.Count(events.TypeToolCalled) != 0 {
			t.Fatalf("args %s reached the tool", args)
		}
		rj := rec.Payloads(events.TypeToolRejected)
		if len(rj) != 1 || rj[0].(events.ToolRejected).Reason != events.RejectSchema {
			t.Fatalf("args %s: rejections %v, want one schema rejection", args, rj)
		}
		// The model gets a structured error back.
		if n := m.Calls(); n != 2 {
			t.Fatalf("calls = %d", n)
		}
	}
	// The tool message is structured: run once more and read it from the next request.
	resetSpy()
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", bad[0]), harnesstest.Text("stop")}}
	run(t, spec(t, spyTask, "schema_gate", 0), m)
	msgs := m.Requests[2].Messages
	var body struct {
		OK         bool     `json:"ok"`
		Error      string   `json:"error"`
		Violations []string `json:"violations"`
	}
	if err := json.Unmarshal([]byte(msgs[len(msgs)-1].Content), &body); err != nil || body.OK || body.Error != "schema" || len(body.Violations) == 0 {
		t.Fatalf("tool message %q, want a structured schema error", msgs[len(msgs)-1].Content)
	}
	// Without the gate, the same arguments do reach the tool.
	resetSpy()
	m = &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", bad[1]), harnesstest.Text("stop")}}
	run(t, spec(t, spyTask, "baseline", 0), m)
	if spyExecs("first_tool") != 1 {
		t.Fatalf("without the schema gate the tool ran %d times, want 1", spyExecs("first_tool"))
	}
}

func TestPermissionGate(t *testing.T) {
	registerSpy()
	for _, path := range []string{"data/spy/other", "data/spy/ok/../other", "/etc/passwd", "data/spy/okay"} {
		resetSpy()
		m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("first_tool", `{"path":"`+path+`"}`), harnesstest.Text("stop")}}
		_, rec := run(t, spec(t, spyTask, "permission_gate", 0), m)
		rj := rec.Payloads(events.TypeToolRejected)
		if spyExecs("first_tool") != 0 || len(rj) != 1 || rj[0].(events.ToolRejected).Reason != events.RejectPermission {
			t.Fatalf("path %s: execs %d, rejections %v", path, spyExecs("first_tool"), rj)
		}
	}
	// A real task: reading another customer's data is refused under the gate, allowed without.
	task, _ := tasks.Get("credit_ecl")
	other := `{"path":"data/credit_ecl/portfolio-b"}`
	for _, c := range []struct {
		name   string
		called int
	}{{"permission_gate", 0}, {"baseline", 1}} {
		m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("load_portfolio", other)}, Then: harnesstest.Text("stop")}
		_, rec := run(t, spec(t, task.Name, c.name, 0), m)
		if rec.Count(events.TypeToolCalled) != c.called {
			t.Fatalf("%s: %d tool calls, want %d", c.name, rec.Count(events.TypeToolCalled), c.called)
		}
	}
}

func TestCircuitBreakerRepairTurns(t *testing.T) {
	registerSpy()
	for _, bound := range []int{3, 1} {
		resetSpy()
		c := cond(t, "circuit_breaker")
		c.Limits.MaxRepairTurns = bound
		s := spec(t, spyTask, "circuit_breaker", 0)
		s.Condition = c
		m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan")},
			Then: harnesstest.Call("first_tool", `{"path":"data/spy/ok","fail":true}`)}
		res, _ := run(t, s, m)
		// The first failure, then `bound` repair turns, all failing: the next failure trips it.
		if res.Status != events.StatusEscalated || res.EscalationReason != "circuit_breaker" || spyExecs("first_tool") != bound+1 || m.Calls() != 1+bound+1 {
			t.Fatalf("bound %d: status %s (%s), execs %d, calls %d", bound, res.Status, res.EscalationReason, spyExecs("first_tool"), m.Calls())
		}
	}
	// Progress resets the count: alternate failure and success never trips a bound of 1.
	resetSpy()
	c := cond(t, "circuit_breaker")
	c.Limits.MaxRepairTurns = 1
	s := spec(t, spyTask, "circuit_breaker", 0)
	s.Condition = c
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"),
		harnesstest.Call("first_tool", `{"path":"data/spy/ok","fail":true}`), harnesstest.Call("first_tool", `{"path":"data/spy/ok"}`),
		harnesstest.Call("final_tool", `{"path":"data/spy/ok","fail":true}`), harnesstest.Call("final_tool", `{"path":"data/spy/ok"}`),
		harnesstest.Text("done")}}
	if res, _ := run(t, s, m); !res.Success {
		t.Fatalf("alternating run: %s (%s)", res.Status, res.EscalationReason)
	}
}

func TestCircuitBreakerTokenBudget(t *testing.T) {
	registerSpy()
	resetSpy()
	c := cond(t, "circuit_breaker")
	c.Limits.TokenBudget = 1000
	s := spec(t, spyTask, "circuit_breaker", 0)
	s.Condition = c
	big := func(req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c", Name: "first_tool", Arguments: `{"path":"data/spy/ok"}`}},
			Usage: llm.Usage{PromptTokens: 600, CompletionTokens: 1}}, nil
	}
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan")}, Then: big}
	res, rec := run(t, s, m)
	rj := rec.Payloads(events.TypeToolRejected)
	if res.Status != events.StatusEscalated || res.EscalationReason != "token_budget" || spyExecs("first_tool") != 1 ||
		len(rj) != 1 || rj[0].(events.ToolRejected).Reason != events.RejectBudget {
		t.Fatalf("status %s (%s), execs %d, rejections %v", res.Status, res.EscalationReason, spyExecs("first_tool"), rj)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	registerSpy()
	for _, tc := range []struct {
		cond       string
		maxRetries int
		wantStates []string
	}{
		{"retry", 2, []string{"FIRST", "FIRST", "FIRST"}},                // free mode: one state per executed call
		{"fsm+retry", 2, []string{"FIRST", "FIRST", "FIRST"}},            // initial entry + 2 re-entries
		{"fsm+retry", 1, []string{"FIRST", "FIRST"}},                     //
		{"fsm+retry+validation", 2, []string{"FIRST", "FIRST", "FIRST"}}, // failures from validation
	} {
		resetSpy()
		c := cond(t, tc.cond)
		c.Limits.MaxRetries = tc.maxRetries
		s := spec(t, spyTask, tc.cond, 0)
		s.Condition = c
		args := `{"path":"data/spy/ok","fail":true}`
		if strings.Contains(tc.cond, "validation") {
			args = `{"path":"data/spy/ok","limit":3}`
		}
		m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan")}, Then: harnesstest.Call("first_tool", args)}
		res, rec := run(t, s, m)
		if res.Status != events.StatusEscalated || res.EscalationReason != "retries_exhausted" ||
			rec.Count(events.TypeRetryScheduled) != tc.maxRetries || spyExecs("first_tool") != tc.maxRetries+1 ||
			!slices.Equal(res.States, tc.wantStates) {
			t.Fatalf("%s/%d: status %s (%s), retries %d, execs %d, states %v", tc.cond, tc.maxRetries, res.Status,
				res.EscalationReason, rec.Count(events.TypeRetryScheduled), spyExecs("first_tool"), res.States)
		}
	}
}

func TestValidationAlone(t *testing.T) {
	registerSpy()
	resetSpy()
	// An invalid final output is not accepted as the output; the valid one after it is.
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"),
		harnesstest.Call("final_tool", `{"path":"data/spy/ok","limit":2}`), harnesstest.Text("done")}}
	res, rec := run(t, spec(t, spyTask, "validation", 0), m)
	if res.Output != nil || rec.Count(events.TypeOutputInvalid) != 1 || res.Status != events.StatusFailed {
		t.Fatalf("output %s, invalid %d, status %s", res.Output, rec.Count(events.TypeOutputInvalid), res.Status)
	}
	// Without validation the same output is the run's output.
	resetSpy()
	m = &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"),
		harnesstest.Call("final_tool", `{"path":"data/spy/ok","limit":2}`), harnesstest.Text("done")}}
	if res, _ := run(t, spec(t, spyTask, "baseline", 0), m); res.Output == nil {
		t.Fatal("baseline dropped an unvalidated output")
	}
}

func TestModelFailureAndCancellation(t *testing.T) {
	task, _ := tasks.Get("credit_ecl")
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Ideal(task), harnesstest.Fail(errors.New("boom"))}}
	res, rec := run(t, spec(t, "credit_ecl", "harness", 0), m)
	mc := rec.Payloads(events.TypeModelCalled)
	// A model that never answered is the infrastructure's failure, not the agent's.
	if res.Status != events.StatusErrored || !strings.Contains(res.Error, "boom") || mc[len(mc)-1].(events.ModelCalled).Error == "" ||
		res.Cause.Kind != events.CauseOther || !strings.Contains(res.Cause.Detail, "boom") {
		t.Fatalf("status %s error %q cause %+v", res.Status, res.Error, res.Cause)
	}

	ctx, cancel := context.WithCancel(context.Background())
	rec = harnesstest.NewRecorder()
	calls := 0
	m = &harnesstest.Script{Then: func(req llm.Request) (llm.Response, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return harnesstest.Ideal(task)(req)
	}}
	res, err := harness.Run(ctx, spec(t, "credit_ecl", "harness", 0), m, rec)
	if err != nil || res.Status != events.StatusAborted || res.Success {
		t.Fatalf("cancelled run: %v, status %s", err, res.Status)
	}
	checkFold(t, rec, res)
}

func TestEmitFailureStopsTheRun(t *testing.T) {
	task, _ := tasks.Get("credit_ecl")
	rec := harnesstest.NewRecorder()
	rec.Fail = events.TypeToolCalled
	m := harnesstest.IdealModel(task)
	_, err := harness.Run(context.Background(), spec(t, "credit_ecl", "harness", 0), m, rec)
	if !errors.Is(err, harness.ErrEmit) {
		t.Fatalf("Run error = %v, want ErrEmit", err)
	}
	if rec.Count(events.TypeToolReturned) != 0 {
		t.Fatal("the run went on after an emit failure")
	}
}

func TestRunRejectsBadSpecs(t *testing.T) {
	good := spec(t, "credit_ecl", "harness", 0)
	tests := []struct {
		name string
		mut  func(*harness.RunSpec)
	}{
		{"no task", func(s *harness.RunSpec) { s.Task = "" }},
		{"unknown task", func(s *harness.RunSpec) { s.Task = "nope" }},
		{"instance out of range", func(s *harness.RunSpec) { s.Instance = 99 }},
		{"no model", func(s *harness.RunSpec) { s.Model = "" }},
		{"no condition", func(s *harness.RunSpec) { s.Condition = condition.Condition{} }},
	}
	for _, tt := range tests {
		s := good
		tt.mut(&s)
		rec := harnesstest.NewRecorder()
		if _, err := harness.Run(context.Background(), s, &harnesstest.Script{}, rec); !errors.Is(err, harness.ErrSpec) || len(rec.Types()) != 0 {
			t.Errorf("%s: Run error = %v (events %v), want ErrSpec and no events", tt.name, err, rec.Types())
		}
	}
}

// TestSameScriptSameEvents: the harness adds no nondeterminism of its own: the same model
// answers give byte-identical payloads (latencies aside).
func TestSameScriptSameEvents(t *testing.T) {
	for _, name := range []string{"aml_screening", "credit_ecl", "renal_dosing"} {
		task, _ := tasks.Get(name)
		var first []string
		for range 2 {
			_, rec := run(t, spec(t, name, "harness_sp", 1), harnesstest.IdealModel(task))
			var got []string
			for _, e := range rec.Envelopes {
				b, _ := json.Marshal(zeroLatency(e.Payload))
				got = append(got, string(e.Type)+string(b))
			}
			if first == nil {
				first = got
			} else if !slices.Equal(first, got) {
				t.Fatalf("%s: two identical runs emitted different events", name)
			}
		}
	}
}

// TestOversizedModelValues: whatever a model returns, every event stays encodable.
func TestOversizedModelValues(t *testing.T) {
	registerSpy()
	resetSpy()
	huge := strings.Repeat("x", 2<<20)
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text(huge),
		harnesstest.Call("first_tool", `{"path":"`+huge+`"}`),
		func(llm.Request) (llm.Response, error) {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: huge, Name: huge, Arguments: "{}"}}}, nil
		},
		harnesstest.Text("stop")}}
	res, rec := run(t, spec(t, spyTask, "baseline", 0), m)
	if spyExecs("first_tool") != 0 || rec.Count(events.TypeToolRejected) != 2 || res.Status != events.StatusFailed {
		t.Fatalf("execs %d, events %v, status %s", spyExecs("first_tool"), rec.Types(), res.Status)
	}
	for _, b := range rec.Encoded {
		if len(b) > 200<<10 {
			t.Fatalf("an event of %d bytes", len(b))
		}
	}
}
