package queryapi

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
)

const testToken = "s3cret-token"

// newTestDB makes a real DuckDB file with a small projection-like schema: a table with a
// study column and every kind of value, a table without one, and a studies view.
func newTestDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("duckdb", filepath.Join(dir, "analyzer.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{
		`CREATE TABLE runs (study VARCHAR, run VARCHAR, ok BOOLEAN, tokens BIGINT, latency DOUBLE,
			started TIMESTAMPTZ, day DATE, cost DECIMAL(10,2), tags VARCHAR[], meta JSON, attempt INTEGER)`,
		`INSERT INTO runs SELECT 's' || (i % 3), 'r' || i, i % 2 = 0, i * 100, i / 4,
			TIMESTAMPTZ '2026-01-02 03:04:05.123456+00' + INTERVAL (i) MINUTE, DATE '2026-01-02',
			(i * 1.25)::DECIMAL(10,2), ['a', 'b' || i], json_object('i', i), i::INTEGER
		 FROM range(30) t(i)`,
		`INSERT INTO runs VALUES ('s0', 'rnull', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`CREATE TABLE rejected_events (stream_seq BIGINT, raw BLOB, reason VARCHAR)`,
		`CREATE TABLE transitions (study VARCHAR, run VARCHAR, state VARCHAR)`,
		`INSERT INTO rejected_events VALUES (7, '\x00\x01'::BLOB, 'malformed'), (9, 'x'::BLOB, 'invalid')`,
		`CREATE VIEW studies AS
			SELECT study, 'Study ' || study AS name, 'harness' AS source_kind, 20::BIGINT AS expected_runs,
			       count(*) AS runs, count(*) FILTER (WHERE ok IS NOT NULL) AS finished_runs,
			       count(*) FILTER (WHERE ok IS NULL) AS incomplete_runs,
			       count(*) FILTER (WHERE ok) AS succeeded_runs, count(*) AS attempts,
			       0::BIGINT AS errored_runs, 0::BIGINT AS fold_errors,
			       count(*) FILTER (WHERE ok IS NOT NULL) AS scored_runs, 0::BIGINT AS aborted_runs
			FROM runs GROUP BY study`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	spool := filepath.Join(dir, "spool")
	if err := sqlguard.Harden(context.Background(), db, spool); err != nil {
		t.Fatal(err)
	}
	return db, spool
}

func newTestServer(t *testing.T, token string, extra ...prometheus.Collector) (*httptest.Server, *sql.DB) {
	t.Helper()
	db, spool := newTestDB(t)
	s, err := NewServer(db, Config{
		Token:        token,
		Limits:       sqlguard.Config{MaxRows: 20, Timeout: 10 * time.Second},
		ExportSpool:  spool,
		ExportTables: []string{"runs", "rejected_events", "studies", "transitions", "not_there"},
		Collectors:   extra,
	})
	if err != nil {
		t.Fatal(err)
	}
	return newHTTPServer(t, s), db
}

func newHTTPServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url, token, ctype, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAuth(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, testToken)
	sqlBody := `{"sql":"SELECT 1"}`
	tests := []struct {
		name   string
		do     func(token string) *http.Response
		public bool
	}{
		{"healthz", func(tok string) *http.Response { return get(t, ts.URL+"/healthz", tok) }, true},
		{"sql", func(tok string) *http.Response { return post(t, ts.URL+"/v1/sql", tok, MediaJSON, sqlBody) }, false},
		{"studies", func(tok string) *http.Response { return get(t, ts.URL+"/v1/studies", tok) }, false},
		{"metrics", func(tok string) *http.Response { return get(t, ts.URL+"/metrics", tok) }, false},
		{"export", func(tok string) *http.Response { return post(t, ts.URL+"/v1/export", tok, "", "") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tok := range []string{"", "wrong"} {
				resp := tt.do(tok)
				want := http.StatusUnauthorized
				if tt.public {
					want = http.StatusOK
				}
				if resp.StatusCode != want {
					t.Errorf("%s with token %q: status %d, want %d", tt.name, tok, resp.StatusCode, want)
				}
				if !tt.public && resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", tt.name)
				}
			}
			if resp := tt.do(testToken); resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Errorf("%s with the token: status %d (%s), want 200", tt.name, resp.StatusCode, b)
			}
		})
	}

	// The client reports a 401 as ErrUnauthorized.
	_, err := NewClient(ts.URL, "wrong").Studies(context.Background())
	if !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Client.Studies with a wrong token = %v, want ErrUnauthorized", err)
	}
}

func TestNoToken(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	resp := post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT 1 AS one")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200 without a configured token", resp.StatusCode)
	}
}

func TestJSONFormat(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	c := NewClient(ts.URL, "")
	tab, err := c.Query(context.Background(), SQLRequest{
		SQL: "SELECT run, ok, tokens, latency, started, day, cost, tags, meta, attempt FROM runs WHERE run IN ('r5', 'rnull') ORDER BY run",
	})
	if err != nil {
		t.Fatal(err)
	}
	if tab.RowCount != 2 || len(tab.Rows) != 2 || tab.Truncated {
		t.Fatalf("got %d rows (truncated %v), want 2", len(tab.Rows), tab.Truncated)
	}
	wantTypes := []string{"VARCHAR", "BOOLEAN", "BIGINT", "DOUBLE", "TIMESTAMPTZ", "DATE", "DECIMAL(10,2)", "VARCHAR[]", "JSON", "INTEGER"}
	for i, c := range tab.Columns {
		if c.Type != wantTypes[i] {
			t.Errorf("column %s type %q, want %q", c.Name, c.Type, wantTypes[i])
		}
	}
	got, _ := json.Marshal(tab.Rows[0])
	want := `["r5",false,500,1.25,"2026-01-02T03:09:05.123456Z","2026-01-02",6.25,["a","b5"],{"i":5},5]`
	if string(got) != want {
		t.Errorf("row = %s\nwant  %s", got, want)
	}
	got, _ = json.Marshal(tab.Rows[1])
	if want := `["rnull",null,null,null,null,null,null,null,null,null]`; string(got) != want {
		t.Errorf("null row = %s, want %s", got, want)
	}
}

func TestCSVFormat(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	for _, how := range []struct {
		name string
		resp func() *http.Response
	}{
		{"json body", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", MediaJSON, `{"sql":"SELECT run, ok, cost, tags, started FROM runs WHERE run IN ('r5','rnull') ORDER BY run","format":"csv"}`)
		}},
		{"query parameter", func() *http.Response {
			return post(t, ts.URL+"/v1/sql?format=csv", "", "text/plain", "SELECT run, ok, cost, tags, started FROM runs WHERE run IN ('r5','rnull') ORDER BY run")
		}},
		{"accept header", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT run, ok, cost, tags, started FROM runs WHERE run IN ('r5','rnull') ORDER BY run", "Accept", "text/csv")
		}},
	} {
		t.Run(how.name, func(t *testing.T) {
			resp := how.resp()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			recs, err := csv.NewReader(resp.Body).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := [][]string{
				{"run", "ok", "cost", "tags", "started"},
				{"r5", "false", "6.25", `["a","b5"]`, "2026-01-02 03:09:05.123456Z"},
				{"rnull", "", "", "", ""},
			}
			if fmt.Sprint(recs) != fmt.Sprint(want) {
				t.Errorf("csv = %q\nwant  %q", recs, want)
			}
			if resp.Header.Get(HeaderRowCount) != "2" || resp.Header.Get(HeaderTruncated) != "false" {
				t.Errorf("headers: rows %q truncated %q", resp.Header.Get(HeaderRowCount), resp.Header.Get(HeaderTruncated))
			}
		})
	}
}

// TestArrowFormat decodes the answer with arrow-go's own IPC reader.
func TestArrowFormat(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	resp := post(t, ts.URL+"/v1/sql", "", MediaJSON,
		`{"sql":"SELECT run, ok, tokens, latency, started, day, cost, tags, attempt FROM runs WHERE run IN ('r5', 'rnull') ORDER BY run","format":"arrow"}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != MediaArrow {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	rd, err := ipc.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	wantTypes := []arrow.DataType{
		arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Float64, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Etc/UTC"},
		arrow.FixedWidthTypes.Date32, &arrow.Decimal128Type{Precision: 10, Scale: 2},
		arrow.ListOf(arrow.BinaryTypes.String), arrow.PrimitiveTypes.Int32,
	}
	schema := rd.Schema()
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(f.Type, wantTypes[i]) {
			t.Errorf("field %s: %v, want %v", f.Name, f.Type, wantTypes[i])
		}
	}
	if v, _ := schema.Field(6).Metadata.GetValue(MetaDuckDBType); v != "DECIMAL(10,2)" {
		t.Errorf("cost metadata %q, want DECIMAL(10,2)", v)
	}
	rows := 0
	for rd.Next() {
		rec := rd.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			run := rec.Column(0).(*array.String).Value(i)
			switch run {
			case "r5":
				if got := rec.Column(2).(*array.Int64).Value(i); got != 500 {
					t.Errorf("tokens = %d, want 500", got)
				}
				ts := rec.Column(4).(*array.Timestamp).Value(i).ToTime(arrow.Microsecond)
				if want := time.Date(2026, 1, 2, 3, 9, 5, 123456000, time.UTC); !ts.Equal(want) {
					t.Errorf("started = %v, want %v", ts, want)
				}
				if got := rec.Column(6).(*array.Decimal128).Value(i).ToString(2); got != "6.25" {
					t.Errorf("cost = %s, want 6.25", got)
				}
				if got := rec.Column(7).(*array.List).ValueStr(i); got != `["a","b5"]` {
					t.Errorf("tags = %s, want the list [a b5]", got)
				}
				if got := rec.Column(5).(*array.Date32).Value(i).ToTime().Format("2006-01-02"); got != "2026-01-02" {
					t.Errorf("day = %s", got)
				}
			case "rnull":
				for j := 1; j < int(rec.NumCols()); j++ {
					if !rec.Column(j).IsNull(i) {
						t.Errorf("rnull column %d is not null", j)
					}
				}
			default:
				t.Errorf("unexpected run %q", run)
			}
			rows++
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("read %d rows, want 2", rows)
	}
}

func TestArrowEmptyAndManyRows(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	for _, tt := range []struct {
		sql  string
		want int64
	}{
		{"SELECT * FROM runs WHERE false", 0},
		{"SELECT i FROM range(100000) t(i)", 20}, // the server's row limit
	} {
		resp := post(t, ts.URL+"/v1/sql?format=arrow", "", "text/plain", tt.sql)
		rd, err := ipc.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", tt.sql, err)
		}
		var n int64
		for rd.Next() {
			n += rd.RecordBatch().NumRows()
		}
		if rd.Err() != nil || n != tt.want {
			t.Errorf("%s: %d rows (%v), want %d", tt.sql, n, rd.Err(), tt.want)
		}
		rd.Release()
	}
}

func TestRowLimitHTTP(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	c := NewClient(ts.URL, "")
	tests := []struct {
		limit         int
		wantRows      int
		wantTruncated bool
	}{
		{0, 20, true},     // the server's default (MaxRows 20)
		{5, 5, true},      // a lower limit
		{31, 31, false},   // above the default, under the cap: all 31 rows
		{1000, 31, false}, // all rows
	}
	for _, tt := range tests {
		tab, err := c.Query(context.Background(), SQLRequest{SQL: "SELECT * FROM runs", Limit: tt.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Rows) != tt.wantRows || tab.Truncated != tt.wantTruncated {
			t.Errorf("limit %d: %d rows truncated %v, want %d, %v", tt.limit, len(tab.Rows), tab.Truncated, tt.wantRows, tt.wantTruncated)
		}
	}
}

func TestSQLErrors(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	tests := []struct {
		name, ctype, body string
		wantStatus        int
		wantKind          string
	}{
		{"write", "text/plain", "DELETE FROM runs", http.StatusForbidden, "refused"},
		{"file", "text/plain", "SELECT * FROM read_csv('/etc/passwd')", http.StatusForbidden, "refused"},
		{"url", "text/plain", "SELECT * FROM 'https://example.com/x.csv'", http.StatusForbidden, "refused"},
		{"timeout", MediaJSON, `{"sql":"SELECT count(*) FROM range(1000000000000) t(i) WHERE hash(i) % 7 = 3","timeout":"200ms"}`, http.StatusGatewayTimeout, "timeout"},
		{"unknown table", "text/plain", "SELECT * FROM nope", http.StatusUnprocessableEntity, "query"},
		{"syntax", "text/plain", "SELEC 1", http.StatusUnprocessableEntity, "query"},
		{"empty", "text/plain", "  ", http.StatusBadRequest, "bad_request"},
		{"bad format", MediaJSON, `{"sql":"SELECT 1","format":"xml"}`, http.StatusBadRequest, "bad_request"},
		{"bad timeout", MediaJSON, `{"sql":"SELECT 1","timeout":"soon"}`, http.StatusBadRequest, "bad_request"},
		{"bad json", MediaJSON, `{"sql":`, http.StatusBadRequest, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, ts.URL+"/v1/sql", "", tt.ctype, tt.body)
			var eb ErrorBody
			if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || eb.Kind != tt.wantKind {
				t.Errorf("status %d kind %q (%s), want %d %q", resp.StatusCode, eb.Kind, eb.Error, tt.wantStatus, tt.wantKind)
			}
		})
	}
	// The database is untouched and the server still answers.
	tab, err := NewClient(ts.URL, "").Query(context.Background(), SQLRequest{SQL: "SELECT count(*) AS n FROM runs"})
	if err != nil || tab.Rows[0][0].(json.Number).String() != "31" {
		t.Errorf("count after the errors = %v, %v; want 31", tab, err)
	}
}

func TestParams(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	c := NewClient(ts.URL, "")
	tab, err := c.Query(context.Background(), SQLRequest{
		SQL:    "SELECT run, tokens FROM runs WHERE study = $1 AND tokens >= $2 AND latency < $3 AND ok = $4 ORDER BY run",
		Params: []any{"s1", 1000, 7.5, true},
	})
	if err != nil {
		t.Fatal(err)
	}
	// s1 holds runs 1, 4, 7, …, 28; ok ones are even; tokens = 100 i; latency = i / 4.
	got, _ := json.Marshal(tab.Rows)
	if want := `[["r10",1000],["r16",1600],["r22",2200],["r28",2800]]`; string(got) != want {
		t.Errorf("rows = %s, want %s", got, want)
	}
	resp := post(t, ts.URL+"/v1/sql", "", MediaJSON, `{"sql":"SELECT $1","params":[{"a":1}]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("object parameter: status %d, want 400", resp.StatusCode)
	}
}

func TestStudies(t *testing.T) {
	ts, _ := newTestServer(t, "")
	st, err := NewClient(ts.URL, "").Studies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 3 {
		t.Fatalf("got %d studies, want 3", len(st))
	}
	s0 := st[0]
	if s0.Study != "s0" || *s0.ExpectedRuns != 20 || s0.FinishedRuns != 10 || s0.IncompleteRuns != 1 || *s0.Progress != 0.5 || s0.Done {
		b, _ := json.Marshal(s0)
		t.Errorf("s0 = %s", b)
	}
}

func TestMetrics(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	lag := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ditto_analyzer_consumer_lag", Help: "test stand-in for the warehouse's"})
	lag.Set(42)
	ts, _ := newTestServer(t, testToken, lag)
	post(t, ts.URL+"/v1/sql", testToken, "text/plain", "SELECT 1")
	post(t, ts.URL+"/v1/sql", testToken, "text/plain", "DROP TABLE runs")
	resp := get(t, ts.URL+"/metrics", testToken)
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"ditto_analyzer_consumer_lag 42",
		`ditto_analyzer_sql_queries_total{outcome="ok"} 1`,
		`ditto_analyzer_sql_queries_total{outcome="refused"} 1`,
		"ditto_analyzer_sql_query_duration_seconds_bucket",
		"go_goroutines",
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestExportHTTP(t *testing.T) {
	ts, db := newTestServer(t, testToken)
	dir := t.TempDir()
	m, err := NewClient(ts.URL, testToken).Export(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	checkExport(t, db, dir, m)
	// The spool is emptied after each export.
	var spool string
	db.QueryRow("SELECT current_setting('allowed_directories')[1]").Scan(&spool)
	if ents, _ := os.ReadDir(spool); len(ents) != 0 {
		t.Errorf("spool %s keeps %d entries", spool, len(ents))
	}
}

// checkExport compares an export with the database: manifest counts, the partition layout,
// and the Parquet read back by an in-memory DuckDB of this process.
func checkExport(t *testing.T, db *sql.DB, dir string, m *ExportManifest) {
	t.Helper()
	want := map[string]int64{}
	for _, tb := range []string{"runs", "rejected_events", "studies", "transitions"} {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		want[tb] = n
	}
	if len(m.Tables) != 4 {
		t.Fatalf("manifest has %d tables, want 4 (not_there skipped): %+v", len(m.Tables), m.Tables)
	}
	for _, et := range m.Tables {
		if et.Rows != want[et.Name] {
			t.Errorf("manifest %s: %d rows, want %d", et.Name, et.Rows, want[et.Name])
		}
	}
	for _, p := range []string{"runs/study=s0", "runs/study=s1", "runs/study=s2", "rejected_events.parquet", "studies/study=s2",
		"transitions.parquet", ManifestName} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("export lacks %s: %v", p, err)
		}
	}
	reader, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, et := range m.Tables {
		src := filepath.Join(dir, et.Path)
		if et.PartitionBy != "" {
			src = filepath.Join(src, "*", "*.parquet")
		}
		var n int64
		if err := reader.QueryRow("SELECT count(*) FROM read_parquet(?)", src).Scan(&n); err != nil {
			t.Fatalf("read back %s: %v", et.Name, err)
		}
		if n != want[et.Name] {
			t.Errorf("Parquet %s: %d rows, want %d", et.Name, n, want[et.Name])
		}
	}
	// The study column is inside each file as well as in the directory name.
	var studies int
	if err := reader.QueryRow("SELECT count(DISTINCT study) FROM read_parquet(?, hive_partitioning = false)",
		filepath.Join(dir, "runs", "*", "*.parquet")).Scan(&studies); err != nil || studies != 3 {
		t.Errorf("distinct study inside the files = %d (%v), want 3", studies, err)
	}
}

func TestURLFileAndDiscover(t *testing.T) {
	ts, _ := newTestServer(t, testToken)
	dataDir := t.TempDir()
	ctx := context.Background()
	if _, err := Discover(ctx, dataDir, testToken); !errors.Is(err, ErrNoServer) {
		t.Errorf("Discover without a file = %v, want ErrNoServer", err)
	}
	if err := WriteURLFile(dataDir, ts.URL); err != nil {
		t.Fatal(err)
	}
	c, err := Discover(ctx, dataDir, testToken)
	if err != nil || c.BaseURL != ts.URL {
		t.Fatalf("Discover = %v, %v; want %s", c, err, ts.URL)
	}
	// Another analyzer's file is left alone; ours is removed.
	if err := RemoveURLFile(dataDir, "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, URLFileName)); err != nil {
		t.Errorf("RemoveURLFile removed another server's file: %v", err)
	}
	if err := RemoveURLFile(dataDir, ts.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, URLFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("url file still there: %v", err)
	}
	// A stale file (server gone) is no server.
	if err := WriteURLFile(dataDir, "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(ctx, dataDir, testToken); !errors.Is(err, ErrNoServer) {
		t.Errorf("Discover with a stale file = %v, want ErrNoServer", err)
	}
}
