package warehouse_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/queries"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// ingestCases give each ingester statement parameters for the golden test. Statements that
// need the Arrow view ingest_batch get a temporary table of that name instead.
var ingestCases = map[string][]any{
	"ingest_events":         nil,
	"ingest_max_id":         nil,
	"ingest_existing_ids":   {"01SAMPLE000000000000000001", "01SYNstudy1000000000009", []string{"01SAMPLE000000000000000002", "01SYNstudy1000000000003", "nope"}},
	"ingest_rejected":       {int64(999), "ditto.events.a.b.c", "m1", []byte("x"), "bad", "malformed"},
	"ingest_watermark_get":  {"DITTO_EVENTS"},
	"ingest_watermark_set":  {"DITTO_EVENTS", int64(1000), int64(1), int64(2), int64(3)},
	"ingest_attempt_events": {[]string{"study1"}, []string{"b-0"}, []int32{1}},
	"ingest_folded_keys":    {[]string{"study1", "study1", "study1"}, []string{"b-0", "b-3", "zzz"}, []int32{1, 1, 1}},
	"ingest_fold_delete":    {[]string{"study1", "sample-prod"}, []string{"b-0", "r1-run-001"}, []int32{1, 1}},
}

// goldenDB is the fixed data set of the golden test: the sample traces, the synthetic study,
// a re-sent event and a poison message, ingested in order.
func goldenDB(t *testing.T) *warehouse.Warehouse {
	b := bustest.NewServer(t).Connect(t)
	msgs := testMsgs(t)
	msgs = append(msgs, msg{msgs[5].subject, "resent-5", msgs[5].data}, msg{"ditto.events.x.y.z", "bad", []byte("{")})
	publish(t, b, msgs)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 50, BatchWait: 20 * time.Millisecond})
	return w
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
				got = strings.Join(dump(t, db, s.Object()), "\n")
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
			}
			checkGolden(t, s.Name, got+"\n")
		})
	}
}

// runRolledBack runs an ingester statement in a transaction that is rolled back, so that the
// cases do not see each other's writes.
func runRolledBack(t *testing.T, db *sql.DB, s queries.Statement, args []any) string {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
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
	trimmed := strings.TrimSpace(stripHeader(s.SQL))
	if strings.HasPrefix(strings.ToUpper(trimmed), "SELECT") || strings.HasPrefix(strings.ToUpper(trimmed), "WITH") {
		rows, err := tx.Query(s.SQL, args...)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		return strings.Join(rowsText(t, rows), "\n")
	}
	res, err := tx.Exec(s.SQL, args...)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	n, _ := res.RowsAffected()
	return fmt.Sprintf("rows affected: %d", n)
}

func stripHeader(q string) string {
	var b strings.Builder
	for _, line := range strings.Split(q, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func rowsText(t *testing.T, rows *sql.Rows) []string {
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = cols[i] + "=" + fmtVal(v)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestQueriesGolden -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s:\n got: %.2000s\nwant: %.2000s", name, path, got, want)
	}
}
