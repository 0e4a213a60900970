package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/queries"
)

type studyView struct {
	S studyRow
	// Report is the latest computed report; Computing says a newer one is being computed,
	// Behind that it was computed before the latest events.
	Report         *report.Report
	Computing      bool
	Behind         bool
	Err            string
	Took, AsOf     string
	CellHeader     []string
	Cells          []linkedRow
	Conditions     report.Table
	CompHeader     []string
	Comparisons    []comparisonRow
	Significant    int
	Basic          []basicCell
	BasicTruncated bool
	Reports        []reportLink
	Drift          *driftChart
	DriftErr       string
}

// linkedRow is a table row whose first cells link to a page.
type linkedRow struct {
	Link string
	Cols []string
}

type comparisonRow struct {
	Cols             []string
	Significant, Bad bool
	LinkA, LinkB     string
}

type basicCell struct {
	Link, Task, Model, Condition string
	Progress, Success, Traces    string
}

type reportLink struct {
	Href, Title, Kind, Written string
	Findings, Bad              int
}

// cellLink is the Cell page of a cell.
func cellLink(study string, k analysis.CellKey) string {
	v := url.Values{"task": {k.Task}, "model": {k.Model}, "condition": {k.Condition}}
	return "/studies/" + url.PathEscape(study) + "/cell?" + v.Encode()
}

// runLink is the Run page of a run (attempt 0: its latest).
func runLink(study, run string, attempt int64) string {
	l := "/studies/" + url.PathEscape(study) + "/runs/" + url.PathEscape(run)
	if attempt > 0 {
		l += "?attempt=" + fmt.Sprint(attempt)
	}
	return l
}

func (c *Console) findStudy(ctx context.Context, study string) (studyRow, error) {
	st, err := c.readStudies(ctx)
	if err != nil {
		return studyRow{}, err
	}
	for _, s := range st {
		if s.Study == study {
			return s, nil
		}
	}
	return studyRow{}, fmt.Errorf("%w: no study %q", errNotFound, study)
}

func (c *Console) studyPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	study := r.PathValue("study")
	s, err := c.findStudy(ctx, study)
	if err != nil {
		return err
	}
	v := studyView{S: s}
	sr, running, err := c.reports.get(ctx, study)
	if err != nil {
		return err
	}
	v.Computing = running
	if sr != nil {
		v.Behind = running
		v.Took = sr.Took.Round(time.Millisecond).String()
		v.AsOf = sr.At.UTC().Format(time.RFC3339)
		if sr.Err != nil && sr.Report == nil {
			v.Err = sr.Err.Error()
		}
		v.Drift = sr.Drift
		if sr.DriftErr != nil {
			v.DriftErr = sr.DriftErr.Error()
		}
		if rep := sr.Report; rep != nil {
			v.Report = rep
			c.studyTables(&v, study, rep)
		}
	}
	if v.Report == nil {
		if err := c.basicCells(ctx, &v, study); err != nil {
			return err
		}
	}
	for _, e := range report.Index(c.cfg.ReportsDir) {
		if e.Study == study {
			v.Reports = append(v.Reports, reportLink{Href: c.cfg.ReportsPrefix + url.PathEscape(e.Name) + "/", Title: e.Title,
				Kind: e.Kind, Written: e.Written, Findings: e.Findings, Bad: e.Bad})
		}
	}
	c.render(w, r, "study", http.StatusOK, pageData{Title: s.Name, Nav: "studies", Data: v})
	return nil
}

// studyTables fills the page's tables from the report: package report's tables (its one
// number formatter), with links to the cells.
func (c *Console) studyTables(v *studyView, study string, rep *report.Report) {
	ct := rep.CellTable()
	v.CellHeader = ct.Header
	for i, row := range ct.Rows {
		v.Cells = append(v.Cells, linkedRow{Link: cellLink(study, rep.Metrics.Cells[i].CellKey), Cols: row})
	}
	v.Conditions = rep.ConditionTable()
	cmp := rep.ComparisonTable()
	v.CompHeader = cmp.Header
	for i, row := range cmp.Rows {
		if i >= len(rep.Metrics.Comparisons) {
			break // drift rows; a study report has none
		}
		cm := rep.Metrics.Comparisons[i]
		cr := comparisonRow{Cols: row, Significant: cm.Significant, Bad: cmp.Flag[i],
			LinkA: cellLink(study, analysis.CellKey{Task: cm.Task, Model: cm.Model, Condition: cm.ConditionA}),
			LinkB: cellLink(study, analysis.CellKey{Task: cm.Task, Model: cm.Model, Condition: cm.ConditionB})}
		if cr.Significant {
			v.Significant++
		}
		v.Comparisons = append(v.Comparisons, cr)
	}
}

// basicCells fills the table shown while the metrics are computed: the cells view's counts.
func (c *Console) basicCells(ctx context.Context, v *studyView, study string) error {
	rows, cut, err := c.rd.query(ctx, queries.ConsoleCells, study)
	if err != nil {
		return err
	}
	v.BasicTruncated = cut
	for _, r := range rows {
		k := analysis.CellKey{Task: str(r[0]), Model: str(r[1]), Condition: str(r[2])}
		var expected *int64
		if r[3] != nil {
			e := integer(r[3])
			expected = &e
		}
		b := basicCell{Link: cellLink(study, k), Task: k.Task, Model: k.Model, Condition: k.Condition,
			Progress: progressText(integer(r[5]), expected), Traces: fmt.Sprint(integer(r[11]))}
		b.Success = fmt.Sprintf("%d of %d", integer(r[7]), integer(r[5]))
		v.Basic = append(v.Basic, b)
	}
	return nil
}
