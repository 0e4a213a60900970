package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Unscored says, in sentences, which runs the report's figures leave out and why: errored runs
// with their causes, aborted runs and incomplete runs. It is the report's first section, so
// that a study whose runs never reached their model cannot read as a clean result. Empty when
// every run counted.
func (r *Report) Unscored() []string {
	b := r.Basis
	var out []string
	if b.ErroredRuns > 0 {
		out = append(out, fmt.Sprintf("%d of the %d runs errored: the model or a tool server was never reached or never answered. "+
			"They are the infrastructure's failures, not the agent's behaviour, and are in no metric.", b.ErroredRuns, b.Runs))
		for _, c := range b.Causes {
			kind := "transient, retried first"
			if c.Permanent {
				kind = "permanent, not retried"
			}
			out = append(out, fmt.Sprintf("%d × %s (%s): %s", c.Runs, c.Kind, kind, c.Detail))
		}
	}
	if b.AbortedRuns > 0 {
		out = append(out, fmt.Sprintf("%d %s aborted (interrupted): not scored.", b.AbortedRuns, runsWereWord(b.AbortedRuns)))
	}
	switch {
	case r.Kind == KindDrift && b.FoldErrors > 0:
		out = append(out, fmt.Sprintf("%d %s of the compared windows %s a gap in the history or a refused event: incomplete, in no metric, "+
			"and no alert is computed from their cells until their history is whole.", b.FoldErrors, runsWord(b.FoldErrors), hasWord(b.FoldErrors)))
	case b.IncompleteRuns > 0:
		s := fmt.Sprintf("%d %s incomplete (not finished yet", b.IncompleteRuns, runsAreWord(b.IncompleteRuns))
		if b.FoldErrors > 0 {
			s += fmt.Sprintf(", or a history with a gap or a refused event: %d of them", b.FoldErrors)
		}
		s += "): in no metric until whole"
		if b.FoldErrors > 0 {
			s += ", and no alert is computed from their cells"
		}
		out = append(out, s+".")
	}
	if len(out) > 0 && r.Kind == KindStudy && b.CountedRuns < 2 {
		out = append(out, fmt.Sprintf("%d %s scored: the determinism metrics (RR, DI, TSS, AC) are unknown (%s), not 1.",
			b.CountedRuns, runsWereWord(b.CountedRuns), nullText))
	}
	return out
}

// UnscoredTable lists the cells holding runs not scored: scored, errored, aborted and
// incomplete runs, and the causes of the errored ones. Study reports only.
func (r *Report) UnscoredTable() Table {
	t := Table{Header: []string{"cell", "scored", "errored", "aborted", "incomplete", "causes"}}
	if r.Metrics == nil {
		return t
	}
	for _, c := range r.Metrics.Cells {
		d := c.Data
		if d.ErroredRuns+d.AbortedRuns+d.IncompleteRuns == 0 {
			continue
		}
		var causes []string
		for _, k := range d.Causes {
			causes = append(causes, fmt.Sprintf("%d × %s", k.Runs, k.Kind))
		}
		t.Rows = append(t.Rows, []string{c.CellKey.String(), strconv.FormatInt(d.CountedRuns, 10), strconv.FormatInt(d.ErroredRuns, 10),
			strconv.FormatInt(d.AbortedRuns, 10), strconv.FormatInt(d.IncompleteRuns, 10), strings.Join(causes, ", ")})
	}
	return t
}

func runsWereWord(n int64) string {
	if n == 1 {
		return "run was"
	}
	return "runs were"
}

func runsAreWord(n int64) string {
	if n == 1 {
		return "run is"
	}
	return "runs are"
}

func hasWord(n int64) string {
	if n == 1 {
		return "has"
	}
	return "have"
}
