// Package report renders what package analysis computes: every text, document and page
// people read about a study's metrics comes from here.
//
//   - A study report: Markdown, self-contained HTML (plots inline as PNG data URIs, no
//     external resource) and JSON (report.json, FormatV1), written side by side into a
//     directory (Write), and its summary for a terminal (WriteSummary, what `analyzer demo`
//     prints).
//   - The metrics of an analysis.Result on their own: the tables `analyzer metrics` prints
//     (WriteMetricsTables) and the metrics JSON document (WriteMetricsJSON, MetricsFormatV1,
//     schema in metrics.schema.json), which is also report.json's "metrics".
//   - The reports directory over HTTP (Handler): an index page and each report's files.
//
// One number formatter (format.go) prints every number of every rendering, so that a p-value,
// an estimate with its SE or a success rate with its interval reads the same in the metrics
// tables, the report's tables and its sentences: p and q with 4 decimals, or 2 significant
// digits in scientific notation below 0.0001 (4.6e-05); an estimate as "0.412 ± 0.031" ("~"
// first when sampled); a rate as "0.90 [0.60, 0.98]"; a null value as "—"; a number of
// unknown precision (a DOUBLE in a query's answer, WriteQueryTable) to the 15 digits a float64
// holds (Decimal); a duration in words ("1 hour 30 minutes", Duration). A 95% interval of a
// share that leaves [0, 1] is named in the notes. `analyzer metrics --summary`
// (WriteMetricsSummary) prints a line per cell and the significant comparisons only; the HTML
// report folds the n.s. comparisons behind <details>; plot legends sit in a column beside the
// data, never over it.
//
// A Report holds the study's analysis.Result (every cell, every comparison,
// Benjamini–Hochberg adjusted), what each cell ran with (harness components, simulated or
// not), the data it stands on (events, runs, incomplete and superseded runs, rejected events,
// the time window) and Findings: one sentence per significant comparison, generated from the
// numbers ("Structured Planning raised RR from 0.41 to 1.00 for sim-steady (simulated) on
// credit_ecl, q = 0.0004, at +12% median latency"). No number in a sentence is written by
// hand.
//
// Build reads a study through an analysis.Querier, so that a report can be made from the
// database file (in one transaction: one snapshot) or through a serving analyzer's HTTP API.
// BuildDrift compares production cells over a time window with the window before it
// (analysis.CompareWindows): variance drift.
//
// A finding is Bad when its difference goes the wrong way for a reader: RR, DI, TSS, AC or
// success down, tokens or latency up. Package schedule alerts on bad findings of drift reports
// and of production release comparisons.
//
// Plots use gonum.org/v1/plot: RR and DI with 95% intervals (±1.96 jackknife SE) per cell,
// token and latency distributions per cell coloured by condition, the divergence profile per
// task, and harness activity (retries, plan re-prompts, rejected tool calls, escalations); in
// the context section of a study with context-managed runs, the budget curves of each model
// (success and overflow rate of each tier against the context-window budget).
//
// Besides the analysis statements, this package runs its own accounting, the Report statements
// of package queries (queries.ReportBasis, ReportCells, ReportStudies, ReportWindowCells; files
// queries/report_*.sql, each stating its inputs and outputs), read through the same
// analysis.Querier as the metrics. TestReportQueriesGolden executes each against a database
// filled through the ingester.
package report
