// Package analysis computes a study's Result from its runs in the DuckDB projection: every
// cell (study, task, model, condition) with every metric of docs/metrics.md and every
// comparison between conditions, Benjamini–Hochberg adjusted across the study. It computes,
// stores (Store) and compares windows of time (CompareWindows); it renders nothing: package
// report turns a Result into the tables of `analyzer metrics`, the metrics JSON document and
// the Markdown and HTML reports.
//
// # Division of labour
//
// SQL (package queries, analysis_*.sql) decides which runs count and groups them by
// signature: analysis_cells accounts for every cell's runs and attempts, analysis_traces
// returns each distinct trace of a cell once with its multiplicity, analysis_runs the per-run
// values (success, tokens, latency, harness activity, pairing indices). Go rebuilds the runs
// with shared contents (a cell of 10⁶ runs with 10 distinct traces holds 10 copies of the
// trace) and package metrics computes everything else: agreements and their jackknife SEs,
// TSS, AC, success with Wilson intervals, pass^k, summaries, divergence, and the tests.
//
// # Which runs count
//
// Each run counts once, by its latest finished attempt: succeeded, failed, escalated and
// aborted runs alike (an aborted run that published run.finished stays in every metric, as the
// spec requires). An attempt superseded by a later attempt of the same run (a worker crashed
// and the job was redelivered) is not counted: it would count one run twice. Superseded
// attempts, the tokens and retries they spent, runs without any finished attempt, fold and
// check errors are reported per cell (CellData) and in the report's notes.
//
// # Comparisons
//
// Within each (task, model): Options.Pairs, by default every condition against baseline and
// harness_sp against harness; for a production study (conditions are releases) each release
// against the previous one. metrics.Compare makes the tests (Fisher, McNemar when the study is
// paired by input and seed index, permutation tests, Mann–Whitney U); the permutation streams
// are seeded from Options.Seed and the two cells' names.
//
// # Determinism
//
// Compute reads in one transaction (one snapshot), orders cells and runs by name, and the
// Result holds no wall-clock time (GeneratedAt is the study's latest event) and no maps: the
// same events and Options give an equal Result, and so a byte-identical metrics document
// (report.WriteMetricsJSON).
//
// # Storage
//
// Store replaces a study's rows of the tables metrics (one row per cell and metric, with its
// SE) and comparisons in one transaction. CompareWindows computes one cell over two windows of
// run start times and compares them (variance drift).
//
// # Reading
//
// Compute and CompareWindows read the database in one transaction; ComputeFrom and
// CompareWindowsFrom read through any Querier, the small interface this package owns:
// SQLQuerier over a database, connection or transaction, or the query API's client
// (queryapi.Client.Querier) when a serving analyzer holds the file. Storing needs the file.
package analysis
