package report

import (
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/metrics"
)

// FormatV1 identifies the JSON document of a Report (report.json).
const FormatV1 = "ditto.report/v1"

// Report kinds.
const (
	// KindStudy is the report of one study: its cells and the comparisons between conditions.
	KindStudy = "study"
	// KindDrift compares production cells over a window with the window before it.
	KindDrift = "drift"
)

// DriftName is the name of the drift report of a production study: <study>.drift. A study
// name never holds a dot (it is a subject token), so no study's own report has this name:
// "<study>-drift" did, and study X-drift and the drift report of study X wrote the same
// directory and the same alert keys.
func DriftName(study string) string { return study + ".drift" }

// Report is everything a report shows. Its JSON form is report.json.
type Report struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	// Name is the report's file-system name (the study, or DriftName(study)).
	Name  string `json:"name"`
	Title string `json:"title"`
	// Study is the study reported on.
	Study string `json:"study"`
	// Metrics is the study's analysis (KindStudy): every cell and comparison.
	Metrics *MetricsDocument `json:"metrics,omitempty"`
	// Drift holds one window comparison per production (task, model) (KindDrift), adjusted
	// together with Benjamini–Hochberg across the report.
	Drift []analysis.WindowComparison `json:"drift,omitempty"`
	// Context is the context-management section (KindStudy with context-managed runs).
	Context *analysis.Context `json:"context,omitempty"`
	// Cells say what each cell ran with.
	Cells []CellInfo `json:"cells"`
	Basis Basis      `json:"basis"`
	// Findings are the significant comparisons, one sentence each.
	Findings []Finding `json:"findings"`
	// Notes describe the data and how to read the numbers.
	Notes []string `json:"notes"`
	// Coding is the coding section (KindStudy with coding runs): coding figures per cell and
	// each harness factor's paired success comparison.
	Coding *analysis.Coding `json:"coding,omitempty"`

	// dists are the per-run token and latency values behind the distribution plots.
	dists map[analysis.CellKey]dist
}

type dist struct{ tokens, latency []float64 }

// CellInfo is what a cell ran with.
type CellInfo struct {
	analysis.CellKey
	// Components are the harness components switched on (run.started), sorted.
	Components []string `json:"components"`
	// Simulated is true when the cell's model is one of ditto's simulated models.
	Simulated bool  `json:"simulated"`
	Sources   int64 `json:"sources"`
}

// Basis is the data a report stands on.
type Basis struct {
	// Events counts the study's stored events (report announcements excluded).
	Events int64 `json:"events"`
	// ReportEvents counts earlier report.published events of the study.
	ReportEvents int64 `json:"report_events"`
	// RejectedEvents counts messages on the study's subjects that reached the stream and could
	// not be stored. Events a producer's receiver refused never reached it: the producer counts
	// those (ditto_ingest_events_rejected_total), and a production report says it cannot.
	RejectedEvents int64 `json:"rejected_events"`
	// FirstEvent and LastEvent bound the events (RFC 3339, UTC).
	FirstEvent *string `json:"first_event"`
	LastEvent  *string `json:"last_event"`
	// Runs, CountedRuns, IncompleteRuns and SupersededAttempts sum the cells' accounting
	// (analysis.CellData).
	Runs        int64 `json:"runs"`
	CountedRuns int64 `json:"counted_runs"`
	// ExpectedRuns is what the study's definition planned: null for production traffic, which
	// has no planned count.
	ExpectedRuns       *int64 `json:"expected_runs"`
	IncompleteRuns     int64  `json:"incomplete_runs"`
	SupersededAttempts int64  `json:"superseded_attempts"`
	FoldErrors         int64  `json:"fold_errors"`
	// ErroredRuns never reached their model or a tool server, or got no answer (Causes says
	// why, over the whole study); AbortedRuns were interrupted. Neither is scored.
	ErroredRuns int64            `json:"errored_runs"`
	AbortedRuns int64            `json:"aborted_runs"`
	Causes      []analysis.Cause `json:"causes"`
	// Models lists every model with whether it is simulated.
	Models []ModelInfo `json:"models"`
	// Window is the drift report's pair of windows ("" for a study report).
	WindowA string `json:"window_a,omitempty"`
	WindowB string `json:"window_b,omitempty"`
}

// ModelInfo says whether a model is simulated.
type ModelInfo struct {
	Name      string `json:"name"`
	Simulated bool   `json:"simulated"`
}

// Finding is one significant comparison as a sentence a reader can act on.
type Finding struct {
	Task       string `json:"task"`
	Model      string `json:"model"`
	ConditionA string `json:"condition_a"`
	ConditionB string `json:"condition_b"`
	Quantity   string `json:"quantity"`
	// ValueA, ValueB and PAdjusted are the comparison's.
	ValueA    metrics.Value `json:"value_a"`
	ValueB    metrics.Value `json:"value_b"`
	PAdjusted metrics.Value `json:"p_adjusted"`
	// Direction is "higher" when B's value is above A's, "lower" when below.
	Direction string `json:"direction"`
	// Bad is true when B is worse than A: RR, DI, TSS, AC or success down, tokens or latency up.
	Bad bool `json:"bad"`
	// IncompleteRuns counts the runs of the compared cells (of the compared windows, in a drift
	// report) whose history has a gap or an event the fold refuses. They are in no metric, but
	// the finding may change when they are whole: no alert is computed from it until then.
	IncompleteRuns int64 `json:"incomplete_runs"`
	// Sentence says it in words.
	Sentence string `json:"sentence"`
}
