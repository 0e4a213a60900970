package warehouse_test

import (
	"path/filepath"
	"testing"

	"github.com/dittolab/ditto/internal/duckconn/duckconntest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/warehouse"
)

// TestCloseAfterAnAbandonedQuery: a connection of the warehouse's left with a query pending
// (what the driver does when a query's context ends at the wrong moment: a console page or an
// export cancelled as serve stops) does not keep the database open once the warehouse is
// closed (package duckconn), and the file opens again in the same process; DuckDB would
// otherwise wait for ever in that open.
func TestCloseAfterAnAbandonedQuery(t *testing.T) {
	for range 20 { // DuckDB keeps such a database in a third to two thirds of the tries
		dir := t.TempDir()
		path := filepath.Join(dir, "w.duckdb")
		w, err := warehouse.Open(t.Context(), warehouse.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		duckconntest.AbandonOn(t, w.DB())
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		leaktest.FilesClosed(t, dir)
		r, err := warehouse.Open(t.Context(), warehouse.Config{Path: path, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
