//go:build !duckdb_arrow

package analysis

import "database/sql"

// txQuerier is the Querier of Snapshot: tx's (DuckDB's Arrow interface is compiled into the
// driver only with the duckdb_arrow build tag).
func txQuerier(_ *sql.Conn, tx *sql.Tx) Querier { return SQLQuerier(tx) }
