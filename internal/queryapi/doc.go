// Package queryapi is the analyzer's HTTP API and its client: ad-hoc read-only SQL over the
// DuckDB projection (POST /v1/sql, answered in JSON, CSV or Arrow IPC), study progress
// (GET /v1/studies), a Parquet export of the projection (POST /v1/export, a tar stream),
// /healthz and Prometheus /metrics. An optional bearer token protects every endpoint but
// /healthz.
//
// Only one process can have a DuckDB file open while it is written, so while `analyzer serve`
// ingests, other processes reach the data only through this API. The serving analyzer writes
// its base URL to <data dir>/analyzer.url (WriteURLFile) and removes it at exit; Discover
// finds it, and `analyzer sql`, `export` and `status` use the API when it answers and open the
// file read-only when it does not.
//
// Queries go through package sqlguard (parse-only SELECT check, table-function allowlist,
// read-only transaction, no external access, timeout, row limit). Results are rendered from
// the driver's Go values (values.go): JSON keeps numbers exact and nesting; CSV and the
// aligned table print scalars as DuckDB does and nested values as JSON; Arrow keeps scalar
// types (arrow.go) and carries nested values as JSON text.
package queryapi
