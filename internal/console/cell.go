package console

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/queries"
)

// maxLanes is how many groups the Cell page draws as lanes; the rest are counted.
const maxLanes = 40

type cellView struct {
	Study, StudyName string
	Key              analysis.CellKey
	Runs             int64 // scored runs
	Groups           []groupView
	MoreGroups       int
	MoreGroupRuns    int64
	Steps            []int // 1..the longest lane
	Variations       []stepVariation
	Outputs          []valueCount
	Unscored         []runItem
	// Selected is the group whose runs are listed (?group=), with its runs.
	Selected    *groupView
	GroupRuns   []runItem
	RunsCut     bool
	CompareBase string // the first run of the modal group
	StudyLink   string
}

type groupView struct {
	Index     int // 1-based, largest group first
	Sig       string
	Short     string
	Runs      int64
	Share     string // of the cell's scored runs, as a percentage
	Succeeded int64
	FirstRun  string
	Lane      []laneStep
	Part      *parting // where it parts from the modal group (nil for the modal group or an equal trace)
	Output    string
	Link      string // the page listing its runs
	Compare   string // compare its first run with the modal group's
}

// laneStep is one tool call of a lane. Class is same (as the modal group's step), args (same
// tool, other arguments), diff (another tool or a step the modal group lacks); First marks
// the step where the group parts from the modal one.
type laneStep struct {
	Tool  string
	Args  string
	Class string
	First bool
}

type runItem struct {
	Run, Status, Error, Started, Link string
	Attempt                           int64
	Success                           bool
	Tokens                            int64
}

func (c *Console) cellPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	study := r.PathValue("study")
	q := r.URL.Query()
	k := analysis.CellKey{Task: q.Get("task"), Model: q.Get("model"), Condition: q.Get("condition")}
	if k.Task == "" || k.Model == "" || k.Condition == "" {
		return fmt.Errorf("%w: a cell needs task, model and condition", errBadRequest)
	}
	v := cellView{Study: study, Key: k, StudyLink: "/studies/" + url.PathEscape(study)}
	rows, cut, err := c.rd.query(ctx, queries.ConsoleCellGroups, study, k.Task, k.Model, k.Condition)
	if err != nil {
		return err
	}
	if cut {
		return fmt.Errorf("console: cell %s has more than %d distinct traces; query it on the SQL page", k, pageRows)
	}
	traces := make([]trace, len(rows))
	calls := make([][]call, len(rows))
	weights := make([]int64, len(rows))
	outputs := map[string]int64{}
	for i, row := range rows {
		cs, err := parseCalls(str(row[7]))
		if err != nil {
			return err
		}
		t := trace{Plan: str(row[4]), States: stringList(row[5]), Calls: cs}
		out := "(no output)"
		if row[8] != nil {
			o := str(row[8])
			t.Output, out = &o, o
		}
		traces[i], calls[i], weights[i] = t, cs, integer(row[1])
		outputs[out] += weights[i]
		v.Runs += weights[i]
	}
	base := cellLink(study, k)
	for i, row := range rows {
		g := groupView{Index: i + 1, Sig: str(row[0]), Runs: weights[i], Succeeded: integer(row[2]), FirstRun: str(row[3])}
		g.Short = g.Sig
		if len(g.Short) > 10 {
			g.Short = g.Short[:10]
		}
		g.Share = fmt.Sprintf("%.0f%%", 100*float64(g.Runs)/float64(v.Runs))
		g.Output = "(no output)"
		if traces[i].Output != nil {
			g.Output = *traces[i].Output
		}
		g.Link = base + "&group=" + url.QueryEscape(g.Sig) + "#runs"
		if i > 0 {
			g.Part = firstDifference(traces[0], traces[i])
			g.Compare = "/compare?" + url.Values{"study": {study}, "a": {str(rows[0][3])}, "b": {g.FirstRun}}.Encode()
		}
		if i < maxLanes {
			g.Lane = lane(traces[0].Calls, traces[i].Calls, g.Part)
		} else {
			v.MoreGroups++
			v.MoreGroupRuns += g.Runs
		}
		v.Groups = append(v.Groups, g)
		if g.Sig == q.Get("group") {
			sel := g
			v.Selected = &sel
		}
	}
	longest := 0
	for i := range min(len(calls), maxLanes) {
		longest = max(longest, len(calls[i]))
	}
	for i := range longest {
		v.Steps = append(v.Steps, i+1)
	}
	if len(v.Groups) > maxLanes {
		v.Groups = v.Groups[:maxLanes]
	}
	if len(rows) > 0 {
		v.CompareBase = str(rows[0][3])
	}
	v.Variations = variations(calls, weights)
	v.Outputs = counted(outputs)

	un, _, err := c.rd.query(ctx, queries.ConsoleCellUnscored, study, k.Task, k.Model, k.Condition)
	if err != nil {
		return err
	}
	for _, row := range un {
		v.Unscored = append(v.Unscored, runItem{Run: str(row[0]), Attempt: integer(row[1]), Status: str(row[2]),
			Error: str(row[3]), Started: timeText(row[4]), Link: runLink(study, str(row[0]), integer(row[1]))})
	}
	if v.Selected != nil {
		rs, cut, err := c.rd.query(ctx, queries.ConsoleCellRuns, study, k.Task, k.Model, k.Condition, v.Selected.Sig)
		if err != nil {
			return err
		}
		v.RunsCut = cut
		for _, row := range rs {
			v.GroupRuns = append(v.GroupRuns, runItem{Run: str(row[0]), Attempt: integer(row[1]), Status: str(row[2]),
				Success: boolean(row[3]), Tokens: integer(row[4]), Started: timeText(row[7]),
				Link: runLink(study, str(row[0]), 0)})
		}
	} else if q.Get("group") != "" {
		return fmt.Errorf("%w: cell %s has no trace group %q", errNotFound, k, q.Get("group"))
	}
	if len(rows) == 0 && len(v.Unscored) == 0 {
		return fmt.Errorf("%w: study %q has no runs in cell %s", errNotFound, study, k)
	}
	c.render(w, r, "cell", http.StatusOK, pageData{Title: k.String(), Nav: "studies", Data: v})
	return nil
}

// lane draws a group's calls against the modal group's, step by step.
func lane(modal, calls []call, part *parting) []laneStep {
	out := make([]laneStep, len(calls))
	for i, cl := range calls {
		s := laneStep{Tool: cl.Tool, Args: string(cl.Args), Class: "same"}
		switch {
		case i >= len(modal) || modal[i].Tool != cl.Tool:
			s.Class = "diff"
		case !sameArgs(modal[i].Args, cl.Args):
			s.Class = "args"
		}
		if part != nil && part.Step == i && (part.Kind == partTool || part.Kind == partArgs || part.Kind == partLength) {
			s.First = true
		}
		out[i] = s
	}
	return out
}

// timeText prints microseconds since the epoch as RFC 3339 with milliseconds ("" for NULL).
func timeText(v any) string {
	if v == nil {
		return ""
	}
	return micros(v).Format("2006-01-02 15:04:05.000Z07:00")
}
