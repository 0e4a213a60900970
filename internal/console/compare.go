package console

import (
	"fmt"
	"net/http"
	"strings"
)

type compareView struct {
	StudyA, StudyB string
	A, B           attempt
	LinkA, LinkB   string
	First          *parting
	Steps          []compareStep
	States         []compareState
	PlanDiffers    bool
	OutputDiffers  bool
	OutputLeaves   []string
	SameTrace      bool
}

type compareStep struct {
	N            int
	ToolA, ToolB string
	ArgsA, ArgsB string
	Class        string // same, args, diff
	Leaves       []string
	First        bool
}

type compareState struct {
	N      int
	A, B   string
	Differ bool
	First  bool
}

func (c *Console) comparePage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	v := compareView{StudyA: q.Get("study"), StudyB: q.Get("study_b")}
	if v.StudyB == "" {
		v.StudyB = v.StudyA
	}
	ra, rb := q.Get("a"), q.Get("b")
	if v.StudyA == "" || ra == "" || rb == "" {
		return fmt.Errorf("%w: compare needs study, a and b (two run ids; study_b for a run of another study)", errBadRequest)
	}
	as, err := c.readAttempts(ctx, v.StudyA, ra)
	if err != nil {
		return err
	}
	bs, err := c.readAttempts(ctx, v.StudyB, rb)
	if err != nil {
		return err
	}
	if v.A, err = pickAttempt(as, q.Get("attempt_a")); err != nil {
		return err
	}
	if v.B, err = pickAttempt(bs, q.Get("attempt_b")); err != nil {
		return err
	}
	v.LinkA, v.LinkB = runLink(v.StudyA, ra, v.A.Attempt), runLink(v.StudyB, rb, v.B.Attempt)
	v.First = firstDifference(v.A.Trace, v.B.Trace)
	v.SameTrace = v.First == nil && v.A.Folded && v.B.Folded
	for i := range max(len(v.A.Calls), len(v.B.Calls)) {
		st := compareStep{N: i + 1, Class: "same"}
		var ca, cb *call
		if i < len(v.A.Calls) {
			ca = &v.A.Calls[i]
			st.ToolA, st.ArgsA = ca.Tool, string(ca.Args)
		}
		if i < len(v.B.Calls) {
			cb = &v.B.Calls[i]
			st.ToolB, st.ArgsB = cb.Tool, string(cb.Args)
		}
		switch {
		case ca == nil || cb == nil || ca.Tool != cb.Tool:
			st.Class = "diff"
		case !sameArgs(ca.Args, cb.Args):
			st.Class = "args"
			st.Leaves = leafDiff(ca.Args, cb.Args)
		}
		if v.First != nil && v.First.Step == i && (v.First.Kind == partTool || v.First.Kind == partArgs || v.First.Kind == partLength) {
			st.First = true
		}
		v.Steps = append(v.Steps, st)
	}
	for i := range max(len(v.A.States), len(v.B.States)) {
		cs := compareState{N: i + 1}
		if i < len(v.A.States) {
			cs.A = v.A.States[i]
		}
		if i < len(v.B.States) {
			cs.B = v.B.States[i]
		}
		cs.Differ = cs.A != cs.B
		cs.First = v.First != nil && v.First.Kind == partState && v.First.Step == i
		v.States = append(v.States, cs)
	}
	v.PlanDiffers = v.A.Trace.Plan != v.B.Trace.Plan
	if v.A.OutputText != v.B.OutputText || v.A.HasOutput != v.B.HasOutput {
		v.OutputDiffers = true
		v.OutputLeaves = leafDiff(rawOrNil(v.A.Trace.Output), rawOrNil(v.B.Trace.Output))
	}
	title := "Compare " + ra + " with " + rb
	c.render(w, r, "compare", http.StatusOK, pageData{Title: title, Nav: "compare", Data: v})
	return nil
}

// joinLeaves prints argument leaf paths for a page.
func joinLeaves(ls []string) string { return strings.Join(ls, ", ") }
