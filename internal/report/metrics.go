package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

// MetricsFormatV1 identifies the metrics document: an analysis.Result with its format, as
// `analyzer metrics --json` writes it and report.json holds it under "metrics" (schema:
// metrics.schema.json).
const MetricsFormatV1 = "ditto.metrics/v1"

// MetricsDocument is the JSON document of an analysis.Result: its format, then the Result's
// fields. Equal Results give equal documents.
type MetricsDocument struct {
	// Format is MetricsFormatV1.
	Format string `json:"format"`
	*analysis.Result
}

// NewMetricsDocument returns the document of r.
func NewMetricsDocument(r *analysis.Result) *MetricsDocument {
	return &MetricsDocument{Format: MetricsFormatV1, Result: r}
}

// WriteMetricsJSON writes the metrics document of r as indented JSON followed by a newline.
// Equal Results give equal bytes.
func WriteMetricsJSON(w io.Writer, r *analysis.Result) error {
	return writeJSON(w, NewMetricsDocument(r))
}

// WriteMetricsTables writes r for people, as `analyzer metrics` prints it: the study, a table
// of cells (N, success with its Wilson interval, RR, DI, TSS, AC with their jackknife SEs,
// plan and output agreement, median tokens and latency, harness activity), a table of
// comparisons (values, difference, test, statistic, p, BH-adjusted p, verdict) and the notes on
// the data.
func WriteMetricsTables(w io.Writer, r *analysis.Result) error {
	bw := bufio.NewWriter(w)
	s := r.Study
	fmt.Fprintf(bw, "study %s (%s, %s", s.ID, s.Name, s.SourceKind)
	if s.Paired {
		fmt.Fprint(bw, ", paired")
	}
	fmt.Fprint(bw, ")")
	if r.GeneratedAt != nil {
		fmt.Fprintf(bw, "  data up to %s", *r.GeneratedAt)
	}
	fmt.Fprintf(bw, "\npermutations %d, seed %d, BH level %s; ± is the jackknife SE, ~ marks a sampled estimate\n\n",
		r.Settings.Permutations, r.Settings.Seed, setting(r.Settings.FDRLevel))

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	grouped := anyInputGroups(r.Cells)
	fmt.Fprintln(tw, "TASK\tMODEL\tCONDITION\tN\t"+groupsHead(grouped)+"SUCCESS [95% CI]\tRR\tDI\tTSS\tAC\tPLAN\tOUTPUT\tOUTPUTS\tTOKENS p50\tLATENCY ms p50\tRETRIES/RUN\tESCALATIONS/RUN")
	for _, c := range r.Cells {
		m := c.Metrics
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			c.Task, c.Model, c.Condition, m.N, groupsCol(grouped, m.InputGroups), success(m.Success, 3), estimate(m.RR), estimate(m.DI), estimate(m.TSS), estimate(m.AC),
			estimate(m.PlanAgree), estimate(m.OutputAgree), m.DistinctOutputs, num(m.Tokens.Median, 0), num(m.Latency.Median, 1),
			num(m.Harness.RetriesPerRun, 3), num(m.Harness.EscalationsPerRun, 3))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(bw, "\n%d comparisons (B against the reference A; difference = B − A)\n", len(r.Comparisons))
	if len(r.Comparisons) > 0 {
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tMODEL\tA\tB\tQUANTITY\tVALUE A\tVALUE B\tDIFF\tTEST\tSTATISTIC\tP\tP BH\tVERDICT")
		for _, c := range r.Comparisons {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				c.Task, c.Model, c.ConditionA, c.ConditionB, c.Quantity, num(c.ValueA, 4), num(c.ValueB, 4),
				num(c.Difference, 4), testText(c.Comparison), num(c.Statistic, 4), pEstimated(c.Comparison), pValue(c.PAdjusted), verdict(c.Comparison))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	writeNotes(bw, r)
	return bw.Flush()
}

// groupsHead and groupsCol add the column of input groups to a text table of production
// cells: RR, DI, TSS and AC rest on those groups.
func groupsHead(grouped bool) string {
	if !grouped {
		return ""
	}
	return "INPUT GROUPS (RUNS, SINGLE)\t"
}

func groupsCol(grouped bool, g *metrics.InputGroups) string {
	if !grouped {
		return ""
	}
	return inputGroups(g) + "\t"
}

// writeNotes writes the Result's notes on the data and the intervals that leave [0, 1].
func writeNotes(w io.Writer, r *analysis.Result) {
	notes := append(slices.Clone(r.Notes), boundNotes(r.Cells)...)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes on the data:")
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// WriteMetricsSummary writes r short, as `analyzer metrics --summary` prints it: one line per
// cell (N, success with its interval, RR, DI, TSS, AC, median tokens and latency) and the
// significant comparisons only, after saying how many there are of how many; the rest (n.s.,
// or not computable) are counted, not listed.
func WriteMetricsSummary(w io.Writer, r *analysis.Result) error {
	bw := bufio.NewWriter(w)
	s := r.Study
	fmt.Fprintf(bw, "study %s (%s, %s)", s.ID, s.Name, s.SourceKind)
	if r.GeneratedAt != nil {
		fmt.Fprintf(bw, "  data up to %s", *r.GeneratedAt)
	}
	fmt.Fprint(bw, "\n\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	grouped := anyInputGroups(r.Cells)
	fmt.Fprintln(tw, "TASK\tMODEL\tCONDITION\tN\t"+groupsHead(grouped)+"SUCCESS [95% CI]\tRR\tDI\tTSS\tAC\tTOKENS p50\tLATENCY p50")
	for _, c := range r.Cells {
		m := c.Metrics
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			c.Task, c.Model, c.Condition, m.N, groupsCol(grouped, m.InputGroups), success(m.Success, 2), num(m.RR.Value, 2), num(m.DI.Value, 2), num(m.TSS.Value, 2),
			num(m.AC.Value, 2), num(m.Tokens.Median, 0), millis(m.Latency.Median))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var sig []analysis.Comparison
	for _, c := range r.Comparisons {
		if c.Significant {
			sig = append(sig, c)
		}
	}
	fmt.Fprintf(bw, "\n%d of %d comparisons significant after Benjamini–Hochberg at %s (B against the reference A; difference = B − A)",
		len(sig), len(r.Comparisons), setting(r.Settings.FDRLevel))
	if rest := len(r.Comparisons) - len(sig); rest > 0 {
		fmt.Fprintf(bw, "; the other %d are not listed (analyzer metrics without --summary lists every one)", rest)
	}
	fmt.Fprintln(bw)
	if len(sig) > 0 {
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tMODEL\tA\tB\tQUANTITY\tVALUE A\tVALUE B\tDIFF\tQ\tVERDICT")
		for _, c := range sig {
			pr := diffPrec(c.Quantity)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Task, c.Model, c.ConditionA, c.ConditionB, c.Quantity,
				num(c.ValueA, pr), num(c.ValueB, pr), signed(c.Difference, pr), pValue(c.PAdjusted), verdict(c.Comparison))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	writeNotes(bw, r)
	return bw.Flush()
}

// writeJSON writes v as indented JSON followed by a newline, HTML characters unescaped.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("report: encode: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
