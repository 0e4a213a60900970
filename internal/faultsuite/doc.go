// Package faultsuite holds ditto's crash tests and its sustained-load session. They run real,
// separate processes — nats-server nodes, producer, harness-worker, analyzer — built into a
// temporary directory, kill them with SIGKILL at awkward moments, and end by counting in DuckDB:
// expected = stored, duplicates = 0.
//
// They are slow and need a C compiler (the analyzer links DuckDB), so `go test ./...` skips
// them; `make test-faults` runs them (DITTO_FAULT_TESTS=1) and `make load` runs the load
// session (DITTO_LOAD=1). See deploy/README.md.
package faultsuite
