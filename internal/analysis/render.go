package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/dittolab/ditto/metrics"
)

// WriteJSON writes the report as indented JSON followed by a newline (schema:
// metrics.schema.json). Equal reports give equal bytes.
func WriteJSON(w io.Writer, rep *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("analysis: encode report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteTables writes the report for people: the study, a table of cells (N, success with its
// Wilson interval, RR, DI, TSS, AC with their jackknife SEs, plan and output agreement, median
// tokens and latency, harness activity), a table of comparisons (values, difference, test, p,
// BH-adjusted p, verdict) and the notes on the data.
func WriteTables(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	s := rep.Study
	fmt.Fprintf(bw, "study %s (%s, %s", s.ID, s.Name, s.SourceKind)
	if s.Paired {
		fmt.Fprint(bw, ", paired")
	}
	fmt.Fprint(bw, ")")
	if rep.GeneratedAt != nil {
		fmt.Fprintf(bw, "  data up to %s", *rep.GeneratedAt)
	}
	fmt.Fprintf(bw, "\npermutations %d, seed %d, BH level %s; ± is the jackknife SE, ~ marks a sampled estimate\n\n",
		rep.Settings.Permutations, rep.Settings.Seed, strconv.FormatFloat(rep.Settings.FDRLevel, 'g', -1, 64))

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tMODEL\tCONDITION\tN\tSUCCESS [95% CI]\tRR\tDI\tTSS\tAC\tPLAN\tOUTPUT\tOUTPUTS\tTOKENS p50\tLATENCY ms p50\tRETRIES/RUN\tESCALATIONS/RUN")
	for _, c := range rep.Cells {
		m := c.Metrics
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			c.Task, c.Model, c.Condition, m.N, successText(m.Success), est(m.RR), est(m.DI), est(m.TSS), est(m.AC),
			est(m.PlanAgree), est(m.OutputAgree), m.DistinctOutputs, val(m.Tokens.Median, 0), val(m.Latency.Median, 1),
			val(m.Harness.RetriesPerRun, 3), val(m.Harness.EscalationsPerRun, 3))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(bw, "\n%d comparisons (B against the reference A; difference = B − A)\n", len(rep.Comparisons))
	if len(rep.Comparisons) > 0 {
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tMODEL\tA\tB\tQUANTITY\tVALUE A\tVALUE B\tDIFF\tTEST\tSTATISTIC\tP\tP BH\tVERDICT")
		for _, c := range rep.Comparisons {
			test := c.Test
			if c.Method != "" {
				test += " (" + c.Method + ")"
			}
			verdict := "n.s."
			switch {
			case !c.P.Valid:
				verdict = "— " + c.Reason
			case c.Significant:
				verdict = "significant"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				c.Task, c.Model, c.ConditionA, c.ConditionB, c.Quantity, val(c.ValueA, 4), val(c.ValueB, 4),
				val(c.Difference, 4), test, val(c.Statistic, 4), pval(c.P), pval(c.PAdjusted), verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(bw, "\nnotes on the data:")
		for _, n := range rep.Notes {
			fmt.Fprintf(bw, "  - %s\n", n)
		}
	}
	return bw.Flush()
}

func val(v metrics.Value, prec int) string {
	if !v.Valid {
		return "—"
	}
	return strconv.FormatFloat(v.V, 'f', prec, 64)
}

func pval(v metrics.Value) string {
	if !v.Valid {
		return "—"
	}
	if v.V != 0 && v.V < 1e-4 {
		return strconv.FormatFloat(v.V, 'e', 2, 64)
	}
	return strconv.FormatFloat(v.V, 'f', 4, 64)
}

func est(e metrics.Estimate) string {
	if !e.Value.Valid {
		return "—"
	}
	s := strconv.FormatFloat(e.Value.V, 'f', 3, 64)
	if e.Estimated {
		s = "~" + s
	}
	if e.SE.Valid {
		s += "±" + strconv.FormatFloat(e.SE.V, 'f', 3, 64)
	}
	return s
}

func successText(s metrics.Success) string {
	if !s.Rate.Valid {
		return "—"
	}
	t := strconv.FormatFloat(s.Rate.V, 'f', 3, 64)
	if s.WilsonLow.Valid && s.WilsonHi.Valid {
		t += " [" + strconv.FormatFloat(s.WilsonLow.V, 'f', 3, 64) + ", " + strconv.FormatFloat(s.WilsonHi.V, 'f', 3, 64) + "]"
	}
	return t
}
