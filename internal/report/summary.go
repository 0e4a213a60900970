package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary writes a study report for a terminal: its title, the cell table of the main
// metrics (success with its interval, RR, DI, TSS, AC, median tokens and latency, harness
// activity per run), the summary of what each change did per model (SummaryTable), the
// findings on Structured Planning (harness against harness_sp) and the notes. It is what
// `analyzer demo` prints.
func WriteSummary(w io.Writer, r *Report) error {
	if r.Metrics == nil {
		return fmt.Errorf("%w: report %s has no study metrics to summarise", ErrInvalid, r.Name)
	}
	fmt.Fprintf(w, "\n%s\n\n", r.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tMODEL\tCONDITION\tN\tSUCCESS [95% CI]\tRR\tDI\tTSS\tAC\tTOKENS p50\tLATENCY ms p50\tRETRIES/RUN\tREPROMPTS/RUN\tESCALATIONS/RUN")
	for _, c := range r.Metrics.Cells {
		m := c.Metrics
		model := c.Model
		for _, ci := range r.Cells {
			if ci.CellKey == c.CellKey && ci.Simulated {
				model += " (sim)"
				break
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Task, model, c.Condition, m.N,
			success(m.Success, 2), num(m.RR.Value, 3), num(m.DI.Value, 3), num(m.TSS.Value, 3), num(m.AC.Value, 3),
			num(m.Tokens.Median, 0), num(m.Latency.Median, 0),
			num(m.Harness.RetriesPerRun, 2), num(m.Harness.PlanRepromptsPerRun, 2), num(m.Harness.EscalationsPerRun, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	sig := 0
	for _, c := range r.Metrics.Comparisons {
		if c.Significant {
			sig++
		}
	}
	fmt.Fprintf(w, "\n%d comparisons, %d significant after Benjamini–Hochberg. What each change did, per model, across tasks "+
		"(↑k/n: significantly higher in k of n tasks, ↓ lower, · no significant difference):\n\n", len(r.Metrics.Comparisons), sig)
	st := r.SummaryTable()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(st.Header, "\t")))
	for _, row := range st.Rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nFindings on the harness's Structured Planning (the harness with and without it):")
	shown := 0
	for _, f := range r.Findings {
		if f.ConditionA == "harness" && f.ConditionB == "harness_sp" {
			fmt.Fprintf(w, "  - %s\n", f.Sentence)
			shown++
		}
	}
	fmt.Fprintf(w, "(%d findings in all, %d shown here; every one is in the report)\n", len(r.Findings), shown)
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n  - %s\n", strings.Join(r.Notes, "\n  - "))
	}
	return nil
}
