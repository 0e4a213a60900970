// Package queryapi is the analyzer's HTTP API and its client: ad-hoc read-only SQL over the
// DuckDB projection (GET or POST /v1/sql, answered as JSON records, JSON lines, the columns
// shape, CSV, Arrow IPC or Parquet), the public schema (GET /v1/schema), study progress
// (GET /v1/studies), a Parquet export of the projection (POST /v1/export, a tar stream),
// /healthz and Prometheus /metrics. An optional bearer token protects every endpoint but
// /healthz. docs/query-api.md is the users' page, with recipes that TestRecipes runs.
//
// Only one process can have a DuckDB file open while it is written, so while `analyzer serve`
// ingests, other processes reach the data only through this API. The serving analyzer writes
// its base URL to <data dir>/analyzer.url (WriteURLFile) and removes it at exit; Discover
// finds it, and `analyzer sql`, `export` and `status` use the API when it answers and open the
// file read-only when it does not.
//
// Queries go through package sqlguard (parse-only SELECT check, table-function allowlist,
// read-only transaction, no external access, timeout, row limit), which streams each answer
// as Arrow record batches converted by DuckDB itself. WriteAnswer (answer.go) encodes them as
// they come, batch by batch, applying the byte limit; values.go renders Arrow values as JSON
// and CSV text. The server holds the first MiB of an answer before it sends the headers, so a
// short answer's headers say how it ended and a query failing early gets an error status; a
// longer answer's end comes in HTTP trailers.
package queryapi
