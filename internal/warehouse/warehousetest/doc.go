// Package warehousetest holds the test helpers shared by the packages that test against a ditto
// DuckDB database filled through the real ingestion path (internal/warehouse, internal/analysis,
// internal/report, internal/console): messages built from the bundled samples or from envelopes,
// publishing them to an embedded nats-server (bustest), ingesting them with warehouse.CatchUp
// into a temporary database, rendering query results as text, and comparing text with golden
// files in testdata/golden (go test -update rewrites them) — for a kind of statement of package
// queries at once with CheckQueriesGolden.
//
// Every helper fails the test (t.Fatal) on an error; none returns one.
package warehousetest
