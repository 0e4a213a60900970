// Command analyzer is ditto's analyzer: it stores the events stream in DuckDB, serves the
// query API and the reports, and computes the metrics. Its subcommands are listed below, one
// file each; 'analyzer --help' prints them.
package main

import "github.com/dittolab/ditto/internal/cli"

var program = cli.Program{
	Name:    "analyzer",
	Summary: "stores ditto's events in DuckDB, serves SQL and reports, computes the metrics",
	Commands: []cli.Command{
		{Name: "serve", Run: runServe,
			Summary: "ingest DITTO_EVENTS and serve the HTTP API (read-only SQL, studies, export, metrics) and the reports"},
		{Name: "ingest", Run: runIngest,
			Summary: "store DITTO_EVENTS in the DuckDB database until interrupted (--once: until caught up)"},
		{Name: "rebuild", Run: runRebuild,
			Summary: "replay DITTO_EVENTS from the first message into a fresh DuckDB file"},
		{Name: "status", Run: runStatus,
			Summary: "per study, finished vs expected runs (progress bars on a terminal; --watch to follow)"},
		{Name: "sql", Usage: `[flags] "SELECT …"   (- reads the query from stdin)`, Run: runSQLCommand,
			Summary: "run one read-only query (through a serving analyzer, else the database file)"},
		{Name: "metrics", Usage: "--study S [flags]", Run: runMetrics,
			Summary: "every cell and comparison of a study, stored in the tables metrics and comparisons"},
		{Name: "report", Usage: "--study S [--out DIR] [flags]", Run: runReport,
			Summary: "write a study's variance report (report.md, self-contained report.html, report.json)"},
		{Name: "export", Usage: "--parquet DIR [flags]", Run: runExport,
			Summary: "write the projection's tables as Parquet partitioned by study"},
		{Name: "demo", Run: runDemo,
			Summary: "run the research study end to end in this process (embedded NATS, simulated models, workers, analyzer) and write its report"},
	},
}

func main() { program.Main() }
