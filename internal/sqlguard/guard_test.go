package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dittolab/ditto/internal/duckconn"
	"github.com/dittolab/ditto/internal/duckconn/duckconntest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/queries"
)

// fixture is a real DuckDB file with a table, a view and a table macro, hardened like serve's.
type fixture struct {
	db     *sql.DB
	dir    string // holds the database and runs.csv; not an allowed directory
	csv    string
	guard  *Guard
	hits   *atomic.Int64 // requests that reached the HTTP server below
	url    string        // a CSV served over HTTP on loopback
	spool  string        // the allowed directory
	dbPath string
}

func newFixture(t *testing.T, harden bool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{dir: t.TempDir(), hits: new(atomic.Int64)}
	f.csv = filepath.Join(f.dir, "runs.csv")
	if err := os.WriteFile(f.csv, []byte("study,n\nsecret,42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.spool = filepath.Join(f.dir, "spool")
	if err := os.Mkdir(f.spool, 0o755); err != nil {
		t.Fatal(err)
	}
	f.dbPath = filepath.Join(f.dir, "w.duckdb")
	c, err := duckconn.New(f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c) // its Close closes c
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{
		"CREATE TABLE runs (study VARCHAR, run VARCHAR, ok BOOLEAN)",
		"INSERT INTO runs VALUES ('s1','r1',true), ('s1','r2',false)",
		"CREATE VIEW finished AS SELECT * FROM runs WHERE ok",
		"CREATE MACRO runs_of(s) AS TABLE SELECT * FROM runs WHERE study = s",
		"CREATE SEQUENCE seq",
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if harden {
		if err := Harden(ctx, db, f.spool); err != nil {
			t.Fatal(err)
		}
	}
	f.db = db
	f.guard, err = New(db, Config{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		fmt.Fprint(w, "study,n\nremote,1\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.url = "http://" + ln.Addr().String() + "/runs.csv"
	return f
}

// TestRefused is the acceptance list: every kind of write, file or URL access and setting
// change is refused, by the guard's check and (for what reaches it) by DuckDB itself, and
// nothing changed afterwards.
func TestRefused(t *testing.T) {
	f := newFixture(t, true)
	out := filepath.Join(f.dir, "out.csv")
	other := filepath.Join(f.dir, "other.duckdb")
	tests := []struct {
		name     string
		give     string
		wantKind string
	}{
		{"insert", "INSERT INTO runs VALUES ('s2','r3',true)", KindStatement},
		{"update", "UPDATE runs SET ok = true", KindStatement},
		{"delete", "DELETE FROM runs", KindStatement},
		{"create table", "CREATE TABLE x AS SELECT * FROM runs", KindStatement},
		{"create view", "CREATE VIEW v AS SELECT 1", KindStatement},
		{"create macro", "CREATE MACRO m(x) AS x + 1", KindStatement},
		{"drop", "DROP TABLE runs", KindStatement},
		{"alter", "ALTER TABLE runs ADD COLUMN c INT", KindStatement},
		{"truncate", "TRUNCATE runs", KindStatement},
		{"copy to file", "COPY runs TO '" + out + "'", KindStatement},
		{"copy select to file", "COPY (SELECT * FROM runs) TO '" + out + "' (FORMAT parquet)", KindStatement},
		{"copy from file", "COPY runs FROM '" + f.csv + "'", KindStatement},
		{"export database", "EXPORT DATABASE '" + f.dir + "/exp'", KindStatement},
		{"attach file", "ATTACH '" + other + "' AS o", KindStatement},
		{"attach memory", "ATTACH ':memory:' AS m", KindStatement},
		{"detach", "DETACH w", KindStatement},
		{"install", "INSTALL httpfs", KindStatement},
		{"force install", "FORCE INSTALL httpfs", KindStatement},
		{"load", "LOAD httpfs", KindStatement},
		{"set", "SET threads = 1", KindStatement},
		{"set external access", "SET enable_external_access = true", KindStatement},
		{"set global", "SET GLOBAL memory_limit = '1TB'", KindStatement},
		{"reset", "RESET threads", KindStatement},
		{"set variable", "SET VARIABLE x = 1", KindStatement},
		{"pragma setting", "PRAGMA threads = 1", KindStatement},
		{"pragma profiling", "PRAGMA enable_profiling", KindStatement},
		{"call", "CALL checkpoint()", KindStatement},
		{"checkpoint", "CHECKPOINT", KindStatement},
		{"vacuum", "VACUUM", KindStatement},
		{"explain analyze", "EXPLAIN ANALYZE SELECT 1", KindStatement},
		{"explain", "EXPLAIN SELECT 1", KindStatement},
		{"pivot creating a type", "PIVOT runs ON study USING count(*)", KindStatement},
		{"begin", "BEGIN TRANSACTION", KindStatement},
		{"use", "USE memory", KindStatement},
		{"prepare", "PREPARE p AS SELECT 1", KindStatement},
		{"select then drop", "SELECT 1; DROP TABLE runs", KindStatement},
		{"two selects", "SELECT 1; SELECT 2", KindMultiple},
		{"read_csv", "SELECT * FROM read_csv('" + f.csv + "')", KindFunction},
		{"read_csv_auto", "SELECT * FROM read_csv_auto('" + f.csv + "')", KindFunction},
		{"read_parquet", "SELECT * FROM read_parquet('" + f.dir + "/x.parquet')", KindFunction},
		{"parquet_scan", "SELECT * FROM parquet_scan('x.parquet')", KindFunction},
		{"read_json", "SELECT * FROM read_json('" + f.dir + "/x.json')", KindFunction},
		{"read_ndjson", "SELECT * FROM read_ndjson_auto('x.ndjson')", KindFunction},
		{"read_text", "SELECT * FROM read_text('/etc/passwd')", KindFunction},
		{"read_blob", "SELECT * FROM read_blob('/etc/passwd')", KindFunction},
		{"glob", "SELECT * FROM glob('/etc/*')", KindFunction},
		{"schema-qualified read_csv", "SELECT * FROM main.read_csv('" + f.csv + "')", KindFunction},
		{"read_csv in subquery", "SELECT (SELECT count(*) FROM read_csv('" + f.csv + "')) AS n", KindFunction},
		{"read_csv in cte", "WITH x AS (SELECT * FROM read_csv('" + f.csv + "')) SELECT * FROM x", KindFunction},
		{"read_csv in union", "SELECT study FROM runs UNION ALL SELECT study FROM read_csv('" + f.csv + "')", KindFunction},
		{"read_csv in join", "SELECT * FROM runs JOIN read_csv('" + f.csv + "') c USING (study)", KindFunction},
		{"replacement scan csv", "SELECT * FROM '" + f.csv + "'", KindFile},
		{"replacement scan relative", "SELECT * FROM 'runs.csv'", KindFile},
		{"replacement scan glob", "SELECT * FROM '" + f.dir + "/*.parquet'", KindFile},
		{"replacement scan from-first", "FROM '" + f.csv + "'", KindFile},
		{"http url scan", "SELECT * FROM '" + f.url + "'", KindFile},
		{"http url read_csv", "SELECT * FROM read_csv('" + f.url + "')", KindFunction},
		{"s3 url", "SELECT * FROM 's3://bucket/x.parquet'", KindFile},
		{"dynamic sql", "SELECT * FROM query('SELECT * FROM read_csv(''" + f.csv + "'')')", KindFunction},
		{"query_table", "SELECT * FROM query_table('runs')", KindFunction},
		{"checkpoint function", "SELECT * FROM checkpoint()", KindFunction},
		{"profiling switch", "SELECT * FROM enable_profiling()", KindFunction},
		{"arrow_scan", "SELECT * FROM arrow_scan(0, 0, 0)", KindFunction},
		{"unknown table function", "SELECT * FROM read_xlsx('x.xlsx')", KindFunction},
		{"nextval", "SELECT nextval('seq')", KindFunction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.guard.Query(context.Background(), tt.give, Limits{})
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Query(%q) = %v, want a RefusedError", tt.give, err)
			}
			if re.Kind != tt.wantKind {
				t.Errorf("Query(%q) kind = %q (%v), want %q", tt.give, re.Kind, err, tt.wantKind)
			}
		})
	}

	// Nothing happened: the table, the sequence, the files and the HTTP server are untouched,
	// and the settings are still locked.
	var n int
	if err := f.db.QueryRow("SELECT count(*) FROM runs").Scan(&n); err != nil || n != 2 {
		t.Errorf("runs has %d rows (%v), want 2", n, err)
	}
	for _, p := range []string{out, other, filepath.Join(f.dir, "exp")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v), want no file", p, err)
		}
	}
	if h := f.hits.Load(); h != 0 {
		t.Errorf("the HTTP server got %d requests, want 0", h)
	}
	if ok, err := Hardened(context.Background(), f.db); !ok || err != nil {
		t.Errorf("Hardened = %v, %v; want true", ok, err)
	}
}

// TestEngineLayers shows that DuckDB itself refuses what the check would refuse, so that a
// gap in the check's rules is not a hole: external access is off and the transaction is
// read-only.
func TestEngineLayers(t *testing.T) {
	f := newFixture(t, true)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT * FROM read_csv('" + f.csv + "')",
		"SELECT * FROM '" + f.csv + "'",
		"SELECT * FROM read_csv('" + f.url + "')",
		"SELECT * FROM glob('/etc/*')",
		"COPY runs TO '" + filepath.Join(f.dir, "out.csv") + "'",
		"ATTACH '" + filepath.Join(f.dir, "o.duckdb") + "' AS o",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access = true",
		"SET threads = 1",
	} {
		if _, err := f.db.ExecContext(ctx, q); err == nil {
			t.Errorf("hardened database ran %q, want an error", q)
		}
	}
	if h := f.hits.Load(); h != 0 {
		t.Errorf("the HTTP server got %d requests, want 0", h)
	}

	conn, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO runs VALUES ('x','y',true)"); err == nil {
		t.Error("INSERT in a read-only transaction succeeded")
	}
	rollback(conn)

	// The analyzer's own export into the allowed directory still works.
	if _, err := f.db.ExecContext(ctx, "COPY runs TO '"+filepath.Join(f.spool, "runs.parquet")+"' (FORMAT parquet)"); err != nil {
		t.Errorf("COPY into the allowed directory: %v", err)
	}
	// And the database stays writable for ingestion.
	if _, err := f.db.ExecContext(ctx, "INSERT INTO runs VALUES ('s2','r3',true)"); err != nil {
		t.Errorf("INSERT on the hardened database: %v", err)
	}
}

func TestAllowed(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	tests := []struct {
		name     string
		give     string
		wantRows int
	}{
		{"select", "SELECT * FROM runs", 2},
		{"view", "SELECT * FROM finished", 1},
		{"table macro", "SELECT * FROM runs_of('s1')", 2},
		{"from-first", "FROM runs", 2},
		{"cte", "WITH x AS (SELECT * FROM runs) SELECT count(*) FROM x", 1},
		{"values", "VALUES (1), (2), (3)", 3},
		{"range", "SELECT * FROM range(5)", 5},
		{"catalog", "SELECT table_name FROM duckdb_tables()", 1},
		{"describe", "DESCRIBE runs", 3},
		{"show tables", "SHOW TABLES", 2},
		{"summarize", "SUMMARIZE runs", 3},
		{"trailing semicolon", "SELECT 1;", 1},
		{"trailing comment", "SELECT 1 -- one", 1},
		{"leading comment", "/* hi */ SELECT 1", 1},
		{"json", "SELECT json_extract('{\"a\":1}', '$.a') AS a", 1},
		{"dotted column", "SELECT r.study FROM runs r", 2},
		{"pivot with IN list", "PIVOT runs ON study IN ('s1') USING count(*)", 2},
		{"recursive cte", "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t", 3},
		{"settings", "SELECT value FROM duckdb_settings() WHERE name = 'enable_external_access'", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := f.guard.Query(context.Background(), tt.give, Limits{})
			if err != nil {
				t.Fatalf("Query(%q) = %v", tt.give, err)
			}
			if len(res.Rows) != tt.wantRows {
				t.Errorf("Query(%q) gave %d rows, want %d", tt.give, len(res.Rows), tt.wantRows)
			}
		})
	}
}

func TestRowLimit(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	tests := []struct {
		give          string
		limit         int
		wantRows      int
		wantTruncated bool
		wantFirst     int64
	}{
		{"SELECT * FROM range(100)", 10, 10, true, 0},
		{"SELECT * FROM range(100)", 100, 100, false, 0},
		{"SELECT * FROM range(100)", 1000, 100, false, 0},
		{"SELECT * FROM range(100) t(i) ORDER BY i DESC", 3, 3, true, 99},
		{"SELECT * FROM range(100) -- comment keeps it unwrapped", 7, 7, true, 0},
	}
	for _, tt := range tests {
		res, err := f.guard.Query(context.Background(), tt.give, Limits{Rows: tt.limit})
		if err != nil {
			t.Fatalf("Query(%q) = %v", tt.give, err)
		}
		if len(res.Rows) != tt.wantRows || res.Truncated != tt.wantTruncated {
			t.Errorf("Query(%q, limit %d) = %d rows, truncated %v; want %d, %v",
				tt.give, tt.limit, len(res.Rows), res.Truncated, tt.wantRows, tt.wantTruncated)
		}
		if got := res.Rows[0][0]; got != tt.wantFirst {
			t.Errorf("Query(%q) first value %v, want %d (order kept)", tt.give, got, tt.wantFirst)
		}
	}
	// The guard's cap applies whatever the caller asks.
	g, err := New(f.db, Config{MaxRows: 5, RowsCap: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ask, want int }{{0, 5}, {10, 10}, {1000, 20}} {
		res, err := g.Query(context.Background(), "SELECT * FROM range(100)", Limits{Rows: tt.ask})
		if err != nil || len(res.Rows) != tt.want {
			t.Errorf("Query(limit %d) = %d rows, %v; want %d", tt.ask, len(res.Rows), err, tt.want)
		}
	}
}

// TestTimeoutCancels runs a query that would take hours with a short timeout. With one
// connection in the pool, the query that follows can only run if DuckDB really stopped the
// first (an abandoned query would hold the connection).
func TestTimeoutCancels(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	f.db.SetMaxOpenConns(1)
	slow := "SELECT count(*) FROM range(1000000000000) t(i) WHERE hash(i) % 7 = 3"
	start := time.Now()
	_, err := f.guard.Query(context.Background(), slow, Limits{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Query(slow) = %v, want ErrTimeout", err)
	}
	t.Logf("slow query stopped after %v", time.Since(start))

	res, err := f.guard.Query(context.Background(), "SELECT count(*) FROM runs", Limits{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("query after the timeout: %v", err)
	}
	if res.Rows[0][0] != int64(2) {
		t.Errorf("count = %v, want 2", res.Rows[0][0])
	}
}

func TestParameters(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	res, err := f.guard.Query(context.Background(), "SELECT run FROM runs WHERE study = $1 AND ok = $2", Limits{}, "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != "r1" {
		t.Errorf("rows = %v, want [[r1]]", res.Rows)
	}
	// A parameter is a value: SQL in it is text, not a statement.
	res, err = f.guard.Query(context.Background(), "SELECT count(*) FROM runs WHERE study = $1", Limits{}, "s1'; DROP TABLE runs; --")
	if err != nil || res.Rows[0][0] != int64(0) {
		t.Errorf("injection attempt = %v, %v; want count 0", res.Rows, err)
	}
}

func TestQueryErrorAndEmpty(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	if _, err := f.guard.Query(context.Background(), "SELECT * FROM nosuchtable", Limits{}); !errors.Is(err, ErrQuery) {
		t.Errorf("unknown table: %v, want ErrQuery", err)
	}
	if _, err := f.guard.Query(context.Background(), "SELEC 1", Limits{}); !errors.Is(err, ErrQuery) || errors.Is(err, ErrRefused) {
		t.Errorf("syntax error: %v, want ErrQuery", err)
	}
	if _, err := f.guard.Query(context.Background(), "  ", Limits{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v, want ErrEmpty", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	f := newFixture(t, false)
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := OpenReadOnly(ctx, f.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "INSERT INTO runs VALUES ('a','b',true)"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("INSERT on a read-only database: %v, want a read-only error", err)
	}
	if _, err := db.ExecContext(ctx, "SELECT * FROM read_csv('"+f.csv+"')"); err == nil {
		t.Error("read_csv on a read-only hardened database succeeded")
	}
	if _, err := OpenReadOnly(ctx, filepath.Join(f.dir, "missing.duckdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenReadOnly(missing) = %v, want ErrNotExist", err)
	}
}

// TestOpenReadOnlyClosesAfterAnAbandonedQuery: a connection left with a query pending (what
// the driver does when a query's context ends at the wrong moment) does not keep the database
// open once it is closed (package duckconn); DuckDB would otherwise wait for ever in the next
// open of the file.
func TestOpenReadOnlyClosesAfterAnAbandonedQuery(t *testing.T) {
	f := newFixture(t, false)
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 20 { // DuckDB keeps such a database in a third to two thirds of the tries
		db, err := OpenReadOnly(t.Context(), f.dbPath)
		if err != nil {
			t.Fatal(err)
		}
		duckconntest.AbandonOn(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		leaktest.FilesClosed(t, f.dir)
	}
}

func TestLeadingKeyword(t *testing.T) {
	tests := []struct{ give, want string }{
		{"insert into x", "INSERT"},
		{"  -- c\n /* d */ (Copy x to 'y')", "COPY"},
		{"", ""},
		{"-- only a comment", ""},
	}
	for _, tt := range tests {
		if got := leadingKeyword(tt.give); got != tt.want {
			t.Errorf("leadingKeyword(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestConcurrencyLimit: with one slot taken by a slow query, the next query waits and times
// out within its own timeout; once the slot is free, queries run again.
func TestConcurrencyLimit(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	g, err := New(f.db, Config{MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan error, 1)
	go func() {
		_, err := g.Query(context.Background(), "SELECT count(*) FROM range(1000000000000) t(i) WHERE hash(i) % 7 = 3",
			Limits{Timeout: 3 * time.Second})
		slowDone <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for g.Running() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow query never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := g.Query(context.Background(), "SELECT 1", Limits{Timeout: 200 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Errorf("query while the slot is taken = %v, want ErrTimeout", err)
	}
	if err := <-slowDone; !errors.Is(err, ErrTimeout) {
		t.Errorf("slow query = %v, want ErrTimeout", err)
	}
	if _, err := g.Query(context.Background(), "SELECT 1", Limits{}); err != nil {
		t.Errorf("query after the slot is free: %v", err)
	}
}

// TestLimitsHoldForEveryStatement: a statement the row-limit wrapper cannot wrap (a trailing
// "; -- x") is cut at the row limit all the same, and an answer is cut at its byte limit.
func TestLimitsHoldForEveryStatement(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT * FROM range(30000000); -- x",
		"SELECT * FROM range(30000000) -- x",
		"SELECT * FROM range(30000000)",
	} {
		res, err := f.guard.Query(ctx, q, Limits{Rows: 1000})
		if err != nil {
			t.Fatalf("Query(%q) = %v", q, err)
		}
		if len(res.Rows) != 1000 || !res.Truncated {
			t.Errorf("Query(%q) = %d rows, truncated %v; want 1000, true", q, len(res.Rows), res.Truncated)
		}
	}
	// 8 bytes a row: a 100 KiB limit stops the answer after its first batch over the limit.
	res, err := f.guard.Query(ctx, "SELECT * FROM range(1000000); -- x", Limits{Rows: 1_000_000, Bytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Rows) >= 1_000_000 || len(res.Rows)*8 > 100<<10+8*4096 {
		t.Errorf("byte limit: %d rows, truncated %v; want about %d", len(res.Rows), res.Truncated, 100<<10/8)
	}
}

// TestStreamTypes: the answer arrives as Arrow with DuckDB's own type mapping (lists as lists,
// structs as structs, TIMESTAMPTZ with its zone) and DuckDB's type names.
func TestStreamTypes(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	rows, err := f.guard.Stream(context.Background(),
		"SELECT [1, 2] AS l, {'a': 1, 'b': 'x'} AS s, TIMESTAMPTZ '2026-01-01 00:00:00+00' AS tz, 12.5::DECIMAL(6,2) AS d, '{}'::JSON AS j",
		Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	wantNames := []string{"INTEGER[]", `STRUCT("a" INTEGER, "b" VARCHAR)`, "TIMESTAMPTZ", "DECIMAL(6,2)", "JSON"}
	for i, c := range rows.Columns {
		if c.Type != wantNames[i] {
			t.Errorf("column %s type %q, want %q", c.Name, c.Type, wantNames[i])
		}
	}
	wantIDs := []arrow.Type{arrow.LIST, arrow.STRUCT, arrow.TIMESTAMP, arrow.DECIMAL128, arrow.STRING}
	for i, f := range rows.Schema().Fields() {
		if f.Type.ID() != wantIDs[i] {
			t.Errorf("field %s Arrow type %v, want %v", f.Name, f.Type, wantIDs[i])
		}
	}
	if tz := rows.Schema().Field(2).Type.(*arrow.TimestampType).TimeZone; tz == "" {
		t.Error("TIMESTAMPTZ arrived without a time zone")
	}
	rec := rows.Next()
	if rec == nil || rec.NumRows() != 1 {
		t.Fatalf("first batch %v (%v), want 1 row", rec, rows.Err())
	}
	rec.Release()
	if rows.Next() != nil || rows.Err() != nil || rows.Truncated() {
		t.Errorf("after the only row: err %v, truncated %v", rows.Err(), rows.Truncated())
	}
}

// TestStreamTimeoutWhileReading: the timeout stops a query whose reader is slow, and the
// connection serves the next query.
func TestStreamTimeoutWhileReading(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	f.db.SetMaxOpenConns(1)
	rows, err := f.guard.Stream(context.Background(),
		"SELECT count(*) FROM range(1000000000000) t(i) WHERE hash(i) % 7 = 3", Limits{Timeout: 300 * time.Millisecond})
	if err == nil {
		for rec := rows.Next(); rec != nil; rec = rows.Next() {
			rec.Release()
		}
		err = rows.Err()
		rows.Close()
	}
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("slow query = %v, want ErrTimeout", err)
	}
	res, err := f.guard.Query(context.Background(), "SELECT count(*) FROM runs", Limits{})
	if err != nil || res.Rows[0][0] != int64(2) {
		t.Errorf("query after the timeout = %v, %v", res, err)
	}
}

// TestShortQuerySlot: long queries (a timeout above the default) cannot take every slot; a
// short query still runs while they hold the others.
func TestShortQuerySlot(t *testing.T) {
	needsStream(t)
	f := newFixture(t, true)
	g, err := New(f.db, Config{MaxConcurrent: 2, Timeout: time.Second, MaxTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	slow := "SELECT count(*) FROM range(1000000000000) t(i) WHERE hash(i) % 7 = 3"
	ctx, cancel := context.WithCancel(context.Background())
	longDone := make(chan error, 1)
	go func() {
		_, err := g.Query(ctx, slow, Limits{Timeout: 40 * time.Second})
		longDone <- err
	}()
	defer func() {
		cancel()
		if err := <-longDone; !errors.Is(err, context.Canceled) {
			t.Errorf("long query = %v, want canceled", err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for g.Running() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the long query never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second long query waits for the one long slot: it times out waiting.
	if _, err := g.Query(context.Background(), slow, Limits{Timeout: 1500 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Errorf("second long query = %v, want ErrTimeout (no long slot)", err)
	}
	res, err := g.Query(context.Background(), "SELECT 42", Limits{})
	if err != nil || res.Rows[0][0] != int32(42) {
		t.Errorf("short query beside a long one = %v, %v; want 42", res, err)
	}
}

// needsStream skips a test that answers queries in a build without the duckdb_arrow tag, where
// Stream fails with ErrNoArrow (sqlguardtest.NeedsQueries, which imports this package, for
// the other packages' tests).
func needsStream(tb testing.TB) {
	tb.Helper()
	if !CanStream {
		tb.Skip("answers SQL queries, which needs the duckdb_arrow build tag (make test, or go test -tags duckdb_arrow)")
	}
}

// TestOpenReadOnlyOldRunFolds: a database whose run folds an older build stored in a table
// run_folds (its DDL in the warehouse's testdata), not yet migrated, opened read-only presents
// that table as run_fold_rows, in run_fold_rows' columns, on every connection: the analysis
// statements read it there.
func TestOpenReadOnlyOldRunFolds(t *testing.T) {
	oldDDL, err := os.ReadFile(filepath.Join("..", "warehouse", "testdata", "oldschema", "table_run_folds.sql"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.duckdb")
	mem, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	columns := func(db interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}) []string {
		rows, err := db.QueryContext(context.Background(), "SELECT * FROM run_fold_rows LIMIT 0")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	if _, err := mem.Exec(queries.TableRunFoldRows.SQL); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(columns(mem), ",")
	old, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(string(oldDDL)); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 2 { // the first held, so that the second is another connection
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := strings.Join(columns(c), ","); got != want {
			t.Errorf("connection %d: run_fold_rows has columns %s, want %s", i, got, want)
		}
	}
}
