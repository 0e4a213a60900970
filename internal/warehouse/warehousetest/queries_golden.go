package warehousetest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/queries"
)

// GoldenDB publishes the bundled production samples and then extra to a fresh embedded
// nats-server, ingests them all through warehouse.CatchUp and returns the database: the one the
// golden-query tests read (CheckQueriesGolden).
func GoldenDB(t testing.TB, extra []Msg) *sql.DB {
	t.Helper()
	msgs := append(SampleMsgs(t), extra...)
	b := bustest.NewServer(t).Connect(t)
	Publish(t, b, msgs)
	return Ingest(t, b, warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond}).DB()
}

// CheckQueriesGolden executes every statement of package queries of the given kind (statements
// that only read) against db with each of its parameter lists in cases, in order, and compares
// the results — each list's rows, one line each, after a "-- args: [...]" line — with
// testdata/golden/<name>.golden of the package under test (CheckGolden; -update rewrites it).
// A statement of the kind without cases fails, and so does a case naming no such statement.
func CheckQueriesGolden(t *testing.T, db *sql.DB, kind queries.Kind, cases map[string][][]any) {
	t.Helper()
	statements := map[string]bool{}
	for _, s := range queries.All() {
		if s.Kind != kind {
			continue
		}
		statements[s.Name] = true
		t.Run(s.Name, func(t *testing.T) {
			lists, ok := cases[s.Name]
			if !ok {
				t.Fatalf("no golden case for %s: add its parameter lists to the cases", s.Name)
			}
			var b strings.Builder
			for _, args := range lists {
				fmt.Fprintf(&b, "-- args: %v\n", args)
				rows, err := db.Query(s.SQL, args...)
				if err != nil {
					t.Fatalf("%s%v: %v", s.Name, args, err)
				}
				for _, line := range Rows(t, rows) {
					b.WriteString(line + "\n")
				}
			}
			CheckGolden(t, s.Name, b.String())
		})
	}
	for name := range cases {
		if !statements[name] {
			t.Errorf("the cases have %s, which is not a statement of that kind in package queries", name)
		}
	}
}
