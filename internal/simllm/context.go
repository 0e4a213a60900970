package simllm

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/contextmgr"
)

// ContextParams model how a coding persona responds to what context management and planning
// leave visible in a request. Like every other effect they read the request only: an elided
// observation is a stub in a tool message, a summary a user message that says so, a plan a
// user message listing it, and recall_event and update_plan are tools offered or not. The
// persona never learns the tier, the budget or the condition.
//
// The effects, each a function of the request alone:
//   - the locus look: the fix is chosen with probability ElidedFixFactor times its usual one
//     when the persona read the defect's file but that look is no longer visible (its
//     observation replaced by a stub or cut, or its call folded into a visible summary);
//   - recall: when recall_event is offered and a stub or cut marker names that look's id, it
//     calls recall_event with the id (probability RecallRate) before patching;
//   - planning: while update_plan is offered and no plan is visible it makes one (PlanRate per
//     turn); while a plan is visible its give-up rate is multiplied by PlanGiveUpFactor;
//   - summarization: a summarization request is answered with the transcript's salient lines,
//     each kept with probability SummaryKeep.
//
// Whatever the request no longer shows, the persona no longer knows: a failed patch folded
// into the summary no longer counts among its attempts, an edit it cannot see no longer
// shapes what it believes the files hold (an edit that then fails makes it read the file
// again), and a stub is not a failure (the call ran; its output is gone).
type ContextParams struct {
	// ElidedFixFactor multiplies the chance of choosing the fix when the last look at the
	// defect's file is not visible (its observation elided or cut, or folded into a summary):
	// the persona patches from memory.
	ElidedFixFactor float64 `json:"elided_fix_factor"`
	// RecallRate is the chance, when recall_event is offered and a stub names the elided
	// observation of the defect's file, of calling recall_event with the stub's id instead of
	// acting without it.
	RecallRate float64 `json:"recall_rate"`
	// PlanRate is the chance, when update_plan is offered and no plan is visible, of making a
	// plan with it (alongside the turn's other calls).
	PlanRate float64 `json:"plan_rate"`
	// PlanGiveUpFactor multiplies the give-up rate while a plan is visible (the plan keeps the
	// persona on the procedure: read, patch, verify, repeat).
	PlanGiveUpFactor float64 `json:"plan_give_up_factor"`
	// SummaryKeep is the share of salient lines (file:line positions, failures, panics, the
	// calls made) a summarization answer keeps; the rest are lost.
	SummaryKeep float64 `json:"summary_keep"`
}

// NeutralContext is the response of a persona without context parameters: none (elided
// looks do not lower the fix, no recall, no plan, summaries keep every salient line).
var NeutralContext = ContextParams{ElidedFixFactor: 1, PlanGiveUpFactor: 1, SummaryKeep: 1}

// contextParams returns the persona's context parameters, NeutralContext when it has none.
func (p *Persona) contextParams() ContextParams {
	if p.Context == nil {
		return NeutralContext
	}
	return *p.Context
}

func (c ContextParams) validate(name string) error {
	for _, r := range []struct {
		field string
		v     float64
	}{
		{"elided_fix_factor", c.ElidedFixFactor}, {"recall_rate", c.RecallRate}, {"plan_rate", c.PlanRate},
		{"plan_give_up_factor", c.PlanGiveUpFactor}, {"summary_keep", c.SummaryKeep},
	} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("%w: %s: context.%s = %v, want a value in [0,1]", ErrInvalidPersona, name, r.field, r.v)
		}
	}
	return nil
}

// What context management writes into a request, as the model reads it.
var (
	stubPattern = regexp.MustCompile(`^\[observation (\S+) from \S+ elided: \d+ tokens`)
	cutPattern  = regexp.MustCompile(`\[… \d+ tokens of observation (\S+) cut to fit the context window`)
	salient     = regexp.MustCompile(`\.go:\d+|FAIL|panic|undefined|call (read|edit|bash|create)`)
)

// isSummaryRequest reports whether the request asks for the running summary of an agent's
// work (its system message is the summarization instruction).
func isSummaryRequest(c *conversation) bool {
	return len(c.system) > 0 && c.system[0] == contextmgr.SummaryInstruction && len(c.users) > 0
}

// summaryAnswer is an extractive summary of the transcript in the request: its salient lines
// (positions, failures, the calls made), each kept with probability SummaryKeep, within the
// completion's token cap.
func (t *turn) summaryAnswer() answer {
	keep := t.p.contextParams().SummaryKeep
	var b strings.Builder
	b.WriteString("Work so far:\n")
	budget := math.MaxInt
	if t.req.MaxTokens != nil && *t.req.MaxTokens > 0 {
		budget = int(float64(*t.req.MaxTokens) * t.p.charsPerToken())
	}
	for i, ln := range strings.Split(t.conv.users[len(t.conv.users)-1], "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" || !salient.MatchString(ln) || !t.d.chance(labelf("summary/keep", i), keep) {
			continue
		}
		if len(ln) > 240 {
			ln = ln[:240]
		}
		if b.Len()+len(ln)+3 > budget {
			break
		}
		b.WriteString("- " + ln + "\n")
	}
	return answer{content: b.String(), finish: "stop"}
}

// isStub reports whether a tool result's text is what context management left of it (an
// elision stub, or a body cut around a marker): the call ran, its output is gone.
func isStub(text string) bool {
	return stubPattern.MatchString(text) || cutPattern.MatchString(text)
}

// summaryVisible reports whether the request holds a running summary (earlier steps folded).
func summaryVisible(c *conversation) bool {
	for _, u := range c.users {
		if strings.HasPrefix(u, "Summary of the first") {
			return true
		}
	}
	return false
}

// isHarnessNote reports whether a user message is one the harness adds that is not a
// verification: the planning reminder, the appended plan, or the running summary.
func isHarnessNote(text string) bool {
	return strings.HasPrefix(text, "Your current plan") || text == contextmgr.Reminder ||
		strings.HasPrefix(text, "Summary of the first")
}

// verifications returns the user messages that report a verification, in order (the task's
// prompt first).
func verifications(c *conversation) []string {
	var out []string
	for _, u := range c.users {
		if !isHarnessNote(u) {
			out = append(out, u)
		}
	}
	return out
}

// planVisible reports whether the request shows the persona's plan.
func planVisible(c *conversation) bool {
	for _, u := range c.users {
		if strings.HasPrefix(u, "Your current plan") {
			return true
		}
	}
	return false
}

// locusLook says whether the request still shows the defect's file as last read: visible
// (or never read, with no summary to have hidden a read), or gone with the id of the stub
// that stands for it ("" when folded into a summary).
func (t *turn) locusLook(in *repos.Instance) (visible bool, stubID string) {
	last := -1
	for i, r := range t.conv.results {
		var a struct {
			Path    string `json:"path"`
			Command string `json:"command"`
		}
		_ = json.Unmarshal(r.Args, &a)
		rest, isCat := strings.CutPrefix(a.Command, "cat ")
		if r.Tool == "read" && a.Path == in.Locus.File ||
			r.Tool == "bash" && isCat && !strings.HasPrefix(rest, ">") && slices.Contains(strings.Fields(rest), in.Locus.File) {
			last = i
		}
		if r.Tool == contextmgr.RecallToolName && r.Err == "" && strings.Contains(string(r.Output), "package ") {
			last = i // a recalled body is a look at the code again
		}
	}
	if last < 0 {
		// Never read (not a lost look: the existing skip-read effect covers it), or its call
		// was folded into the summary.
		return !summaryVisible(t.conv), ""
	}
	r := t.conv.results[last]
	if m := stubPattern.FindStringSubmatch(r.Err); m != nil {
		return false, m[1]
	}
	if m := cutPattern.FindStringSubmatch(r.Err + string(r.Output)); m != nil {
		return false, m[1]
	}
	return true, ""
}

// planCall is the update_plan call of a persona making its plan.
func (t *turn) planCall(in *repos.Instance) functionCall {
	return jsonCall2(contextmgr.PlanToolName, map[string]any{"plan": []map[string]string{
		{"step": "read " + in.Locus.File, "status": "in_progress"},
		{"step": "patch the defect", "status": "pending"},
		{"step": "check the verification and repair", "status": "pending"},
	}})
}

// recallCall is the recall_event call for the observation id.
func recallCall(id string) functionCall {
	return jsonCall(contextmgr.RecallToolName, map[string]string{"id": id})
}

func jsonCall2(name string, args any) functionCall {
	b, _ := json.Marshal(args)
	return functionCall{Name: name, Arguments: string(b)}
}
