package warehouse_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/dittolab/ditto/queries"
)

// existingIDsCase is the stored-id probe's case, the same for its two forms.
var existingIDsCase = []any{"01SAMPLE000000000000000001", "01SYNstudy1000000000009", []string{"01SAMPLE000000000000000002", "01SYNstudy1000000000003", "nope"}}

// ingestCases give each ingester statement parameters for the golden test. Statements that
// need the Arrow views ingest_batch and ingest_folds get temporary tables of those names instead.
var ingestCases = map[string][]any{
	"ingest_events":           nil,
	"ingest_folds":            nil,
	"ingest_max_id":           nil,
	"ingest_existing_ids":     existingIDsCase,
	"ingest_existing_ids_few": existingIDsCase, // the same answer as the join's
	"ingest_rejected":         {int64(999), "ditto.events.a.b.c", "m1", []byte("x"), "bad", "malformed"},
	"ingest_watermark_get":    {"DITTO_EVENTS"},
	"ingest_watermark_set":    {"DITTO_EVENTS", int64(1000), int64(1), int64(2), int64(3)},
	"ingest_watermark_insert": {"OTHER_STREAM", int64(7), int64(5), int64(1), int64(1)},
	"ingest_attempt_events":   {[]string{"study1"}, []string{"b-0"}, []int32{1}},
	// The same attempt's events (both in no order: the goldens have them sorted, unordered).
	"ingest_attempt_events_few": {[]string{"b-0"}, []string{"study1.b-0.1"}, "b-0", "b-0"},
	"ingest_folded_key":         {"study1", "b-0", int32(1)},
	"ingest_folded_all":         nil,
	"ingest_folded_count":       nil,
	"ingest_fold_delete":        {[]string{"study1", "sample-prod"}, []string{"b-0", "r1-run-001"}, []int32{1, 1}},
	// The same rows deleted, and not the other attempts of the study or of sample-prod.
	"ingest_fold_delete_few": {[]string{"b-0", "r1-run-001"}, []string{"study1.b-0.1", "sample-prod.r1-run-001.1"},
		"b-0", "r1-run-001"},
	"ingest_schema_check": nil,
}

// unordered are the ingester statements whose rows come in no order: their goldens hold the
// rows sorted.
var unordered = map[string]bool{"ingest_attempt_events": true, "ingest_attempt_events_few": true}

// goldenDB is the fixed data set of the golden test: the sample traces, the synthetic study,
// a re-sent event and a poison message, ingested in order.
func goldenDB(t *testing.T) *warehouse.Warehouse {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	msgs = append(msgs, msg{Subject: msgs[5].Subject, ID: "resent-5", Data: msgs[5].Data}, msg{Subject: "ditto.events.x.y.z", ID: "bad", Data: []byte("{")})
	warehousetest.Publish(t, b, msgs)
	return warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 50, BatchWait: 20 * time.Millisecond})
}

// TestQueriesGolden executes every statement of package queries against DuckDB and compares
// the result with testdata/golden/<name>.golden (go test -run TestQueriesGolden -update).
func TestQueriesGolden(t *testing.T) {
	w := goldenDB(t)
	db := w.DB()
	for _, s := range queries.All() {
		t.Run(s.Name, func(t *testing.T) {
			var got string
			switch s.Kind {
			case queries.Table, queries.View:
				got = strings.Join(warehousetest.Dump(t, db, s.Object()), "\n")
			case queries.Ingest:
				args, ok := ingestCases[s.Name]
				if !ok {
					t.Fatalf("no golden case for ingester statement %s: add one to ingestCases", s.Name)
				}
				got = runRolledBack(t, db, s, args)
			case queries.Analysis:
				t.Skip("executed with golden results by internal/analysis (TestQueriesGolden there)")
			case queries.Report:
				t.Skip("executed with golden results by internal/report (TestReportQueriesGolden there)")
			case queries.Console:
				t.Skip("executed with golden results by internal/console (TestConsoleQueriesGolden there)")
			case queries.Migrate:
				t.Skip("executed on a database of the older shape by TestOldRunFoldsMigrate")
			}
			warehousetest.CheckGolden(t, s.Name, got+"\n")
		})
	}
}

// runRolledBack runs an ingester statement in a transaction that is rolled back, so that the
// cases do not see each other's writes.
func runRolledBack(t *testing.T, db *sql.DB, s queries.Statement, args []any) string {
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if s.Name == "ingest_events" {
		// What the Arrow view holds in production: rows with the columns of events.
		if _, err := tx.Exec(`CREATE TEMP TABLE ingest_batch AS
			SELECT 1000 + stream_seq AS stream_seq, 'copy-' || id AS id, * EXCLUDE (stream_seq, id)
			FROM events WHERE run = 'b-0'`); err != nil {
			t.Fatal(err)
		}
	}
	if s.Name == "ingest_folds" {
		// What the Arrow view holds in production: rows with the columns of run_fold_rows.
		if _, err := tx.Exec(`CREATE TEMP TABLE ingest_folds AS
			SELECT 'copy-' || run AS run, * EXCLUDE (run) FROM run_fold_rows WHERE run = 'b-0'`); err != nil {
			t.Fatal(err)
		}
	}
	out := warehousetest.Run(t, tx, s, args)
	if unordered[s.Name] {
		lines := strings.Split(out, "\n")
		slices.Sort(lines)
		out = strings.Join(lines, "\n")
	}
	return out
}
