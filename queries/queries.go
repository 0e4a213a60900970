// Package queries holds ditto's SQL: the DuckDB schema (tables and views of the projection) and
// the statements the analyzer runs, one statement per .sql file, each beginning with a comment
// that names its inputs and outputs. The files are embedded; Go code refers to them only through
// the variables below, and a test fails if a file is not referenced.
package queries

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Kind classifies a statement.
type Kind int

// Statement kinds.
const (
	Table    Kind = iota // CREATE TABLE: part of the schema
	View                 // CREATE VIEW: part of the schema
	Ingest               // run by the ingester, with parameters or registered Arrow views
	Analysis             // run by package analysis (metrics reports), with parameters
	Report               // run by package report (a report's own accounting), with parameters
	Console              // run by package console (the web console's pages), with parameters
	Migrate              // run by the warehouse when it opens a database an older build wrote
)

// Statement is one embedded SQL statement.
type Statement struct {
	Name string // file name without .sql; for tables and views, the object is the rest after the first '_'
	Kind Kind
	SQL  string
}

// Object returns the table or view a schema statement creates ("" for other kinds).
func (s Statement) Object() string {
	if s.Kind != Table && s.Kind != View {
		return ""
	}
	_, obj, _ := strings.Cut(s.Name, "_")
	return obj
}

func load(name string, kind Kind) Statement {
	b, err := files.ReadFile(name + ".sql")
	if err != nil {
		panic("queries: " + err.Error()) // a missing embedded file is a build error
	}
	return Statement{Name: name, Kind: kind, SQL: string(b)}
}

// Schema tables.
var (
	TableEvents         = load("table_events", Table)
	TableRejectedEvents = load("table_rejected_events", Table)
	TableIngestState    = load("table_ingest_state", Table)
	TableRunFoldRows    = load("table_run_fold_rows", Table)
)

// Schema views, in dependency order.
var (
	ViewRunFolds    = load("view_run_folds", View)
	ViewRuns        = load("view_runs", View)
	ViewPlans       = load("view_plans", View)
	ViewTransitions = load("view_transitions", View)
	ViewToolCalls   = load("view_tool_calls", View)
	ViewValidations = load("view_validations", View)
	ViewModelCalls  = load("view_model_calls", View)
	ViewStudies     = load("view_studies", View)
	ViewCells       = load("view_cells", View)
	ViewAnomalies   = load("view_anomalies", View)
	// ViewContextSeries is the per-turn context size of context-managed (coding) runs.
	ViewContextSeries = load("view_context_series", View)
	// ViewCodingRuns is the coding figures of each coding run attempt.
	ViewCodingRuns = load("view_coding_runs", View)
)

// Ingester statements.
var (
	IngestEvents           = load("ingest_events", Ingest)
	IngestFolds            = load("ingest_folds", Ingest)
	IngestExistingIDs      = load("ingest_existing_ids", Ingest)
	IngestExistingIDsFew   = load("ingest_existing_ids_few", Ingest)
	IngestMaxID            = load("ingest_max_id", Ingest)
	IngestRejected         = load("ingest_rejected", Ingest)
	IngestWatermarkGet     = load("ingest_watermark_get", Ingest)
	IngestWatermarkSet     = load("ingest_watermark_set", Ingest)
	IngestWatermarkInsert  = load("ingest_watermark_insert", Ingest)
	IngestAttemptEvents    = load("ingest_attempt_events", Ingest)
	IngestAttemptEventsFew = load("ingest_attempt_events_few", Ingest)
	IngestFoldedKey        = load("ingest_folded_key", Ingest)
	IngestFoldedAll        = load("ingest_folded_all", Ingest)
	IngestFoldedCount      = load("ingest_folded_count", Ingest)
	IngestFoldDelete       = load("ingest_fold_delete", Ingest)
	IngestFoldDeleteFew    = load("ingest_fold_delete_few", Ingest)
	IngestSchemaCheck      = load("ingest_schema_check", Ingest)
)

// Analysis statements (package analysis): reading a study's runs for the metrics, and the
// metrics and comparisons tables it writes (created on first use, not part of Schema).
var (
	AnalysisStudy             = load("analysis_study", Analysis)
	AnalysisCells             = load("analysis_cells", Analysis)
	AnalysisRuns              = load("analysis_runs", Analysis)
	AnalysisTraces            = load("analysis_traces", Analysis)
	AnalysisCauses            = load("analysis_causes", Analysis)
	AnalysisTableMetrics      = load("analysis_table_metrics", Analysis)
	AnalysisTableComparisons  = load("analysis_table_comparisons", Analysis)
	AnalysisAddPSE            = load("analysis_add_p_se", Analysis)
	AnalysisDeleteMetrics     = load("analysis_delete_metrics", Analysis)
	AnalysisDeleteComparisons = load("analysis_delete_comparisons", Analysis)
	AnalysisInsertMetric      = load("analysis_insert_metric", Analysis)
	AnalysisInsertComparison  = load("analysis_insert_comparison", Analysis)
)

// Report statements (package report): what a report stands on besides the metrics, read
// through the same analysis.Querier.
var (
	ReportBasis       = load("report_basis", Report)
	ReportCells       = load("report_cells", Report)
	ReportStudies     = load("report_studies", Report)
	ReportWindowCells = load("report_window_cells", Report)
	ReportContext     = load("report_context", Report)
	ReportCoding      = load("report_coding", Report)
)

// Console statements (package console): what the web console's pages read, through the same
// read-only guard as the query API.
var (
	ConsoleStudies      = load("console_studies", Console)
	ConsoleWatermark    = load("console_watermark", Console)
	ConsoleCells        = load("console_cells", Console)
	ConsoleCellGroups   = load("console_cell_groups", Console)
	ConsoleCellUnscored = load("console_cell_unscored", Console)
	ConsoleCellRuns     = load("console_cell_runs", Console)
	ConsoleRun          = load("console_run", Console)
	ConsoleRunEvents    = load("console_run_events", Console)
	ConsoleDriftCells   = load("console_drift_cells", Console)
)

// Statements that bring a database an older build wrote to this build's schema.
var (
	// MigrateRunFoldsCopy and MigrateRunFoldsDrop move a run_folds table's rows into
	// run_fold_rows and drop the table, in one transaction.
	MigrateRunFoldsCopy = load("migrate_run_folds_copy", Migrate)
	MigrateRunFoldsDrop = load("migrate_run_folds_drop", Migrate)
	// MigrateRunFoldRowsView presents such a table as run_fold_rows on one connection of a
	// database opened read-only (see ReadOnlyInit).
	MigrateRunFoldRowsView = load("migrate_run_fold_rows_view", Migrate)
)

// ReadOnlyInit returns the statements each connection of a database opened read-only runs
// first, as db (opened read-only on the same file) finds it: for a database whose run folds an
// older build stored in a table run_folds, not yet migrated, MigrateRunFoldRowsView; none
// otherwise. A run_folds table older still (without input_key) gets none: the statements that
// read it fail, and an ingesting open refuses it naming the rebuild.
func ReadOnlyInit(ctx context.Context, db *sql.DB) ([]string, error) {
	var table, current bool
	if err := db.QueryRowContext(ctx, IngestSchemaCheck.SQL).Scan(&table, &current); err != nil {
		return nil, fmt.Errorf("schema check: %w", err)
	}
	if table && current {
		return []string{MigrateRunFoldRowsView.SQL}, nil
	}
	return nil, nil
}

// Schema returns the statements that create the projection, in the order to run them. They are
// idempotent (IF NOT EXISTS, OR REPLACE).
func Schema() []Statement {
	return []Statement{
		TableEvents, TableRejectedEvents, TableIngestState, TableRunFoldRows,
		ViewRunFolds, ViewRuns, ViewPlans, ViewTransitions, ViewToolCalls, ViewValidations, ViewModelCalls,
		ViewStudies, ViewCells, ViewAnomalies, ViewContextSeries, ViewCodingRuns,
	}
}

// All returns every embedded statement.
func All() []Statement {
	return append(Schema(),
		IngestEvents, IngestFolds, IngestExistingIDs, IngestExistingIDsFew, IngestMaxID, IngestRejected, IngestWatermarkGet, IngestWatermarkSet,
		IngestWatermarkInsert, IngestAttemptEvents, IngestAttemptEventsFew, IngestFoldedKey, IngestFoldedAll,
		IngestFoldedCount, IngestFoldDelete, IngestFoldDeleteFew, IngestSchemaCheck,
		AnalysisStudy, AnalysisCells, AnalysisRuns, AnalysisTraces, AnalysisCauses,
		AnalysisTableMetrics, AnalysisTableComparisons, AnalysisAddPSE, AnalysisDeleteMetrics,
		AnalysisDeleteComparisons, AnalysisInsertMetric, AnalysisInsertComparison,
		ReportBasis, ReportCells, ReportStudies, ReportWindowCells, ReportContext, ReportCoding,
		ConsoleStudies, ConsoleWatermark, ConsoleCells, ConsoleCellGroups, ConsoleCellUnscored,
		ConsoleCellRuns, ConsoleRun, ConsoleRunEvents, ConsoleDriftCells,
		MigrateRunFoldsCopy, MigrateRunFoldsDrop, MigrateRunFoldRowsView,
	)
}

// Tables returns the names of the projection's tables and views, the objects users query (and
// an export holds), but not the tables that store a view's rows in another shape (run_fold_rows,
// read as run_folds).
func Tables() []string {
	var names []string
	for _, s := range Schema() {
		if s.Object() != TableRunFoldRows.Object() {
			names = append(names, s.Object())
		}
	}
	return names
}

// Object is a table or view of the projection as users see it.
type Object struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`        // table or view
	Description string `json:"description"` // the first sentence of its SQL file's header
}

// internal are the tables the analyzer keeps for itself: ingestion's watermark and the run
// folds the runs view reads (the view run_folds and its stored rows). Users query runs; these are left out of Public, of the export's
// public tables and of the hints of error messages.
var internal = map[string]bool{TableIngestState.Object(): true, TableRunFoldRows.Object(): true, ViewRunFolds.Object(): true}

// Internal returns the names of the projection's internal tables.
func Internal() []string {
	var names []string
	for _, s := range Schema() {
		if internal[s.Object()] {
			names = append(names, s.Object())
		}
	}
	return names
}

// Public returns the tables and views users query: the projection's (Schema) but the internal
// ones, then the tables `analyzer metrics` writes (metrics, comparisons), which exist once it
// has run.
func Public() []Object {
	var out []Object
	for _, s := range Schema() {
		if internal[s.Object()] {
			continue
		}
		kind := "table"
		if s.Kind == View {
			kind = "view"
		}
		out = append(out, Object{Name: s.Object(), Kind: kind, Description: s.Description()})
	}
	for _, s := range []Statement{AnalysisTableMetrics, AnalysisTableComparisons} {
		out = append(out, Object{Name: strings.TrimPrefix(s.Name, "analysis_table_"), Kind: "table", Description: s.Description()})
	}
	return out
}

// Description returns the first sentence of the statement's header comment (after its name).
func (s Statement) Description() string {
	var text []string
	for _, line := range strings.Split(s.SQL, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "--") {
			break
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "--"))
		if strings.HasPrefix(line, "Inputs:") {
			break
		}
		text = append(text, line)
	}
	d := strings.TrimPrefix(strings.Join(text, " "), s.Name+":")
	d = strings.TrimSpace(d)
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	return d
}
