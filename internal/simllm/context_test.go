package simllm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
)

// The tests below build coding requests the way the harness does (the messages of a run, made
// by contextmgr under a tier when the test says so) and read the personas' answers. Every
// effect is shown from requests alone: the persona is never told a condition.

// ctxInstance is a shipped instance with a fix and at least one wrong (symptom or near-miss)
// candidate touching the defect's file, so that a first failed patch can be staged.
func ctxInstance(t *testing.T) (*repos.Instance, *repos.Candidate, *repos.Candidate) {
	t.Helper()
	in, err := repos.Get("ledger", "rounding")
	if err != nil {
		t.Fatal(err)
	}
	var fix, wrong *repos.Candidate
	for i := range in.Candidates {
		c := &in.Candidates[i]
		switch {
		case c.Kind == repos.KindFix && fix == nil:
			fix = c
		case (c.Kind == repos.KindSymptom || c.Kind == repos.KindNearMiss) && wrong == nil && len(c.Edits) > 0 && c.Edits[0].Path == in.Locus.File:
			wrong = c
		}
	}
	if fix == nil || wrong == nil {
		t.Fatalf("ledger/rounding: want a fix and a wrong candidate on %s", in.Locus.File)
	}
	return in, fix, wrong
}

// ctxRun is the history of a run on in that read the defect's file, applied the wrong
// candidate with edit calls and was told the tests still fail (a verification that names no
// file, so the fix's chance is the persona's base one).
func ctxRun(t *testing.T, in *repos.Instance, wrong *repos.Candidate) (preamble []llm.Message, steps []llm.Message) {
	t.Helper()
	preamble = []llm.Message{
		{Role: llm.RoleSystem, Content: "Fix the defect so that the tests pass."},
		{Role: llm.RoleUser, Content: strings.TrimSpace(in.Prompt) + "\n\nThe verification of the working tree as it is now:\n\nFAIL TestTotals\n"},
	}
	out, _ := json.Marshal(map[string]any{"ok": true, "output": map[string]any{"path": in.Locus.File, "content": in.Files[in.Locus.File]}})
	readArgs, _ := json.Marshal(map[string]string{"path": in.Locus.File})
	target := maps.Clone(in.Files)
	if err := repos.ApplyEdits(target, wrong.Edits); err != nil {
		t.Fatal(err)
	}
	st := codingState{files: maps.Clone(in.Files)}
	edits := editCalls(in, st, wrong, in.Locus.File, target[in.Locus.File])
	var calls []llm.ToolCall
	for i, e := range edits {
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("e%d", i), Name: e.Name, Arguments: e.Arguments})
	}
	steps = []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "r1", Name: "read", Arguments: string(readArgs)}}},
		{Role: llm.RoleTool, ToolCallID: "r1", Content: string(out)},
		{Role: llm.RoleAssistant, ToolCalls: calls},
	}
	for _, c := range calls {
		steps = append(steps, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: `{"ok":true,"output":{"diagnostics":[]}}`})
	}
	steps = append(steps, llm.Message{Role: llm.RoleUser, Content: "The verification after your change:\n\nFAIL TestTotals\n"})
	return preamble, steps
}

// managed returns the messages a tier makes of a history: the middle region acted on at once
// (soft threshold 1 token, the last step alone kept verbatim), bulky from 100 tokens: the read's
// observation is elided, the edit calls' arguments (smaller) are not — the effects tested here
// are those of a stub in place of an observation.
func managed(t *testing.T, tier contextmgr.Tier, preamble, steps []llm.Message) []llm.Message {
	t.Helper()
	c := contextmgr.BPE()
	h := contextmgr.NewHistory(c, preamble...)
	tool := ""
	for i, m := range steps {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			tool = m.ToolCalls[0].Name
		}
		id := fmt.Sprintf("m%d", i+1)
		if m.Role == llm.RoleTool {
			id = fmt.Sprintf("o%d", i+1)
		}
		if err := h.Add(id, m, tool); err != nil {
			t.Fatal(err)
		}
	}
	m, err := contextmgr.New(contextmgr.Config{Tier: tier, Budget: 1 << 20, Soft: 1, Hard: 1 << 20, Recent: 1, Bulky: 100, SummaryTokens: 256}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Prepare(context.Background(), h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Elided == nil {
		t.Fatalf("%s elided nothing", tier)
	}
	return p.Messages
}

// codingReq is the request of msgs to model with the file tools and the extra tools named.
func codingReq(model string, seed int64, msgs []llm.Message, extra ...string) *chatRequest {
	req := &chatRequest{Model: model, Seed: &seed}
	for _, m := range msgs {
		cm := chatMessage{Role: m.Role, Content: messageContent(m.Content), ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, n := range append([]string{"read", "list", "search", "edit", "create"}, extra...) {
		req.Tools = append(req.Tools, toolSpec{Type: "function", Function: &functionDef{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)}})
	}
	return req
}

func answerCalls(a answer) []functionCall {
	if a.call == nil {
		return nil
	}
	return append([]functionCall{*a.call}, a.more...)
}

func ask(t *testing.T, p *Persona, req *chatRequest) answer {
	t.Helper()
	a, aerr := respond(context.Background(), nil, p, req, newDice(req))
	if aerr != nil {
		t.Fatalf("respond: %v", aerr.Message)
	}
	return a
}

// patched applies an answer's edit calls to files (a copy) and reports whether the result is
// the tree the candidate c makes.
func patched(t *testing.T, in *repos.Instance, files map[string]string, calls []functionCall, c *repos.Candidate) bool {
	t.Helper()
	fs := maps.Clone(files)
	edited := false
	for _, call := range calls {
		if call.Name != "edit" {
			continue
		}
		var a struct{ Path, Old, New string }
		if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
			t.Fatal(err)
		}
		nb, err := repos.Replace(fs[a.Path], a.Old, a.New)
		if err != nil {
			return false
		}
		fs[a.Path], edited = nb, true
	}
	want := maps.Clone(in.Files)
	_ = repos.ApplyEdits(want, c.Edits)
	return edited && maps.Equal(fs, want)
}

func personaNamed(t *testing.T, name string) Persona {
	t.Helper()
	for _, p := range DefaultPersonas() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no persona %s", name)
	return Persona{}
}

const ctxSeeds = 400

// TestElidedLocusLowersTheFix: the same run, with the look at the defect's file visible (T0's
// request) or replaced by a stub (T1's), gives the fix less often from the stub, for every
// shipped persona; a persona whose elided_fix_factor is 0 never patches the fix from a stub,
// and one with the neutral factor 1 still does.
func TestElidedLocusLowersTheFix(t *testing.T) {
	in, fix, wrong := ctxInstance(t)
	pre, steps := ctxRun(t, in, wrong)
	visible := append(append([]llm.Message(nil), pre...), steps...)
	elided := managed(t, contextmgr.T1, pre, steps)
	if !regexp.MustCompile(`^\[observation o2 from read elided`).MatchString(elided[3].Content) {
		t.Fatalf("T1's request shows the read as %q, want its stub", elided[3].Content)
	}
	after := maps.Clone(in.Files)
	_ = repos.ApplyEdits(after, wrong.Edits)
	fixes := func(p *Persona, msgs []llm.Message) int {
		n := 0
		for seed := range int64(ctxSeeds) {
			if patched(t, in, after, answerCalls(ask(t, p, codingReq(p.Name, seed, msgs))), fix) {
				n++
			}
		}
		return n
	}
	for _, name := range []string{"sim-steady", "sim-wobbly"} {
		p := personaNamed(t, name)
		v, e := fixes(&p, visible), fixes(&p, elided)
		t.Logf("%s: fix from the visible look %d/%d, from the stub %d/%d (elided_fix_factor %.2f)", name, v, ctxSeeds, e, ctxSeeds, p.Context.ElidedFixFactor)
		if v == 0 || e >= v {
			t.Errorf("%s: fix from the visible look %d, from the stub %d; want fewer from the stub", name, v, e)
		}
		zero := p
		zero.Context = &ContextParams{ElidedFixFactor: 0, PlanGiveUpFactor: 1, SummaryKeep: 1}
		if got := fixes(&zero, elided); got != 0 {
			t.Errorf("%s with elided_fix_factor 0: %d fixes from the stub, want 0", name, got)
		}
		if got := fixes(&zero, visible); got != v {
			t.Errorf("%s with elided_fix_factor 0: %d fixes from the visible look, want %d (the factor acts on stubs only)", name, got, v)
		}
		neutral := p
		neutral.Context = nil
		if got := fixes(&neutral, elided); got == 0 {
			t.Errorf("%s without context parameters: no fix from the stub, want the base rate", name)
		}
	}
}

// TestRecallWhenAStubNamesTheLook: under T2's request (a stub with the recall hint and
// recall_event offered) the personas call recall_event with the stub's id at about their
// recall_rate, and never under T1's (no tool to call) nor with recall_rate 0; the request
// holding the recalled body counts as a visible look again.
func TestRecallWhenAStubNamesTheLook(t *testing.T) {
	in, _, wrong := ctxInstance(t)
	pre, steps := ctxRun(t, in, wrong)
	t2 := managed(t, contextmgr.T2, pre, steps)
	t1 := managed(t, contextmgr.T1, pre, steps)
	recalls := func(p *Persona, msgs []llm.Message, extra ...string) int {
		n := 0
		for seed := range int64(ctxSeeds) {
			calls := answerCalls(ask(t, p, codingReq(p.Name, seed, msgs, extra...)))
			for _, c := range calls {
				if c.Name == contextmgr.RecallToolName {
					if c.Arguments != `{"id":"o2"}` {
						t.Fatalf("recall_event(%s), want the stub's id o2", c.Arguments)
					}
					n++
				}
			}
		}
		return n
	}
	for _, name := range []string{"sim-steady", "sim-wobbly"} {
		p := personaNamed(t, name)
		got := recalls(&p, t2, contextmgr.RecallToolName)
		rate := float64(got) / ctxSeeds
		t.Logf("%s: recall_event in %d/%d answers (recall_rate %.2f)", name, got, ctxSeeds, p.Context.RecallRate)
		// Recall is decided after the give-up draw: about (1-give_up)·recall_rate of answers.
		if want := p.Context.RecallRate; rate < want*0.6 || rate > want*1.1 {
			t.Errorf("%s: recall rate %.3f, want about %.2f", name, rate, want)
		}
		if n := recalls(&p, t1); n != 0 {
			t.Errorf("%s: %d recall_event calls under T1's request (not offered), want 0", name, n)
		}
		none := p
		none.Context = &ContextParams{ElidedFixFactor: 1, PlanGiveUpFactor: 1, SummaryKeep: 1}
		if n := recalls(&none, t2, contextmgr.RecallToolName); n != 0 {
			t.Errorf("%s with recall_rate 0: %d recall_event calls, want 0", name, n)
		}
	}
	// The recalled body answers the persona's recall: the look is visible again.
	p := personaNamed(t, "sim-steady")
	body, _ := json.Marshal(map[string]any{"ok": true, "output": steps[1].Content})
	recalled := append(append([]llm.Message(nil), t2...),
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "rc", Name: contextmgr.RecallToolName, Arguments: `{"id":"o2"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "rc", Content: string(body)})
	for _, c := range []struct {
		name string
		msgs []llm.Message
		want bool
	}{{"stub", t2, false}, {"recalled", recalled, true}} {
		req := codingReq(p.Name, 1, c.msgs, contextmgr.RecallToolName)
		conv, aerr := parseConversation(req.Messages)
		if aerr != nil {
			t.Fatal(aerr.Message)
		}
		tr := &turn{p: &p, req: req, conv: conv}
		if got, _ := tr.locusLook(in); got != c.want {
			t.Errorf("locusLook(%s) visible = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPlanningEffects: with update_plan offered and the reminder in the request the personas
// make a plan at about their plan_rate (and never when the tool is not offered or a plan is
// visible); a visible plan lowers their give-up rate after a failed patch, to zero with
// plan_give_up_factor 0; the appended plan is not taken for a verification.
func TestPlanningEffects(t *testing.T) {
	in, _, wrong := ctxInstance(t)
	pre, steps := ctxRun(t, in, wrong)
	first := append(append([]llm.Message(nil), pre...), llm.Message{Role: llm.RoleUser, Content: contextmgr.Reminder})
	var pl contextmgr.Planner
	if _, err := pl.Update(`{"plan":[{"step":"read","status":"completed"},{"step":"patch","status":"in_progress"}]}`); err != nil {
		t.Fatal(err)
	}
	note, _ := pl.Appended(false)
	plain := append(append([]llm.Message(nil), pre...), steps...)
	withPlan := append(append([]llm.Message(nil), plain...), note)
	count := func(p *Persona, msgs []llm.Message, pred func(answer) bool, extra ...string) int {
		n := 0
		for seed := range int64(ctxSeeds) {
			if pred(ask(t, p, codingReq(p.Name, seed, msgs, extra...))) {
				n++
			}
		}
		return n
	}
	plans := func(a answer) bool {
		calls := answerCalls(a)
		return len(calls) > 0 && calls[0].Name == contextmgr.PlanToolName
	}
	givesUp := func(a answer) bool { return a.call == nil && strings.Contains(a.content, "could not find") }
	for _, name := range []string{"sim-steady", "sim-wobbly"} {
		p := personaNamed(t, name)
		got := float64(count(&p, first, plans, contextmgr.PlanToolName)) / ctxSeeds
		t.Logf("%s: plans on the first turn in %.3f of answers (plan_rate %.2f)", name, got, p.Context.PlanRate)
		if want := p.Context.PlanRate; got < want-0.08 || got > want+0.08 {
			t.Errorf("%s: plan rate %.3f, want about %.2f", name, got, want)
		}
		if n := count(&p, first, plans); n != 0 {
			t.Errorf("%s: %d plans with update_plan not offered, want 0", name, n)
		}
		if n := count(&p, withPlan, plans, contextmgr.PlanToolName); n != 0 {
			t.Errorf("%s: %d new plans with a plan visible, want 0", name, n)
		}
		without, with := count(&p, plain, givesUp), count(&p, withPlan, givesUp)
		t.Logf("%s: gives up after a failed patch in %d/%d answers without a plan, %d/%d with one", name, without, ctxSeeds, with, ctxSeeds)
		if without == 0 || with >= without {
			t.Errorf("%s: gives up %d times without a plan, %d with; want fewer with", name, without, with)
		}
		steadfast := p
		steadfast.Context = &ContextParams{ElidedFixFactor: 1, PlanGiveUpFactor: 0, SummaryKeep: 1}
		if n := count(&steadfast, withPlan, givesUp); n != 0 {
			t.Errorf("%s with plan_give_up_factor 0: gives up %d times with a plan visible, want 0", name, n)
		}
	}
	// The plan appended after the verification is not the verification the persona reads.
	req := codingReq("sim-steady", 1, withPlan)
	conv, _ := parseConversation(req.Messages)
	if vs := verifications(conv); len(vs) != 2 || !strings.HasPrefix(vs[1], "The verification after your change") {
		t.Errorf("verifications(with the plan appended) = %q, want the prompt and the verification", vs)
	}
}

// TestSummarizationAnswer: a summarization request (contextmgr's own) is answered with text
// holding the transcript's salient lines — all of them at summary_keep 1, none at 0 — and the
// same request gets the same summary.
func TestSummarizationAnswer(t *testing.T) {
	in, _, wrong := ctxInstance(t)
	_, steps := ctxRun(t, in, wrong)
	lr := contextmgr.SummaryRequest("sim-steady", "", steps, 256)
	seed := int64(5)
	toReq := func() *chatRequest {
		req := codingReq("sim-steady", seed, lr.Messages)
		req.Tools = nil
		mt := lr.MaxTokens
		req.MaxTokens = &mt
		return req
	}
	p := personaNamed(t, "sim-steady")
	a := ask(t, &p, toReq())
	if a.call != nil || !strings.HasPrefix(a.content, "Work so far:") {
		t.Fatalf("summary answer = %+v, want text", a)
	}
	if b := ask(t, &p, toReq()); b.content != a.content {
		t.Errorf("the same summarization request gave %q then %q", a.content, b.content)
	}
	all := p
	all.Context = &ContextParams{ElidedFixFactor: 1, PlanGiveUpFactor: 1, SummaryKeep: 1}
	full := ask(t, &all, toReq()).content
	for _, want := range []string{"FAIL TestTotals", "call read(", "call edit("} {
		if !strings.Contains(full, want) {
			t.Errorf("summary at summary_keep 1 = %q, want a line with %q", full, want)
		}
	}
	none := p
	none.Context = &ContextParams{ElidedFixFactor: 1, PlanGiveUpFactor: 1, SummaryKeep: 0}
	if got := ask(t, &none, toReq()).content; got != "Work so far:\n" {
		t.Errorf("summary at summary_keep 0 = %q, want no line kept", got)
	}
	if strings.Count(a.content, "\n") > strings.Count(full, "\n") {
		t.Errorf("summary at summary_keep %.2f has more lines than at 1", p.Context.SummaryKeep)
	}
}

// TestStaleEditIsReadAgain: an edit refused because the file was not as the persona believed
// (the change that made it so no longer visible) makes it read the file again; a stub in place
// of an edit's result is not a failed edit.
func TestStaleEditIsReadAgain(t *testing.T) {
	in, _, wrong := ctxInstance(t)
	pre, steps := ctxRun(t, in, wrong)
	failed := append([]llm.Message(nil), steps[:len(steps)-1]...)
	for i, m := range failed {
		if m.Role == llm.RoleTool && m.ToolCallID != "r1" {
			failed[i].Content = `{"ok":false,"error":"tool_error","detail":"edit ` + in.Locus.File + `: old text not found"}`
		}
	}
	p := personaNamed(t, "sim-steady")
	for seed := range int64(20) {
		calls := answerCalls(ask(t, &p, codingReq(p.Name, seed, append(append([]llm.Message(nil), pre...), failed...))))
		if len(calls) == 0 || calls[len(calls)-1].Name != "read" || !strings.Contains(calls[len(calls)-1].Arguments, in.Locus.File) {
			t.Fatalf("seed %d: answer %v after a failed edit, want a read of %s", seed, calls, in.Locus.File)
		}
	}
	req := codingReq(p.Name, 1, managed(t, contextmgr.T1, pre, steps))
	conv, _ := parseConversation(req.Messages)
	tr := &turn{p: &p, req: req, conv: conv}
	if st := tr.codingState(in); st.applied != wrong.ID || len(st.stale) != 0 {
		t.Errorf("codingState with the edits' results elided: applied %q, stale %v; want %q, none", st.applied, st.stale, wrong.ID)
	}
}
