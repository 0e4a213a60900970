// Package duckconntest helps tests show that a DuckDB database closes although a connection
// of its had a query left pending (see package duckconn).
package duckconntest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/dittolab/ditto/internal/duckconn"
	bindings "github.com/duckdb/duckdb-go-bindings"
)

// Abandon leaves a query pending on the DuckDB connection behind dc (a driver connection
// Conn.Raw gave) and never executes it: what the driver does when a query's context ends
// between the two steps.
func Abandon(dc any) error {
	h, err := duckconn.Handle(dc)
	if err != nil {
		return err
	}
	var stmt bindings.PreparedStatement
	defer bindings.DestroyPrepare(&stmt)
	if bindings.Prepare(h, "SELECT count(*) FROM range(1000)", &stmt) == bindings.StateError {
		return errors.New(bindings.PrepareError(stmt))
	}
	var pending bindings.PendingResult
	defer bindings.DestroyPending(&pending)
	if bindings.PendingPrepared(stmt, &pending) == bindings.StateError {
		return errors.New(bindings.PendingError(pending))
	}
	return nil
}

// AbandonOn takes a connection of db, leaves a query pending on it (Abandon) and puts it back
// in db's pool.
func AbandonOn(t testing.TB, db *sql.DB) {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(Abandon); err != nil {
		t.Fatal(err)
	}
}
