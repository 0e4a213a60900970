package queryapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
	"github.com/dittolab/ditto/queries"
)

// bigInt is above 2^53: a float64 reads it as ...992.
const bigInt = "9007199254740993"

// formatsQuery has a value of each common kind, awkward strings and a row of NULLs.
const formatsQuery = `SELECT * FROM (VALUES
	(1, ` + bigInt + `::BIGINT, 1.5::DOUBLE, 'plain', true, TIMESTAMPTZ '2026-01-02 03:04:05.123456+00', ['a', 'b'], {'k': 1, 's': 'x'}, 12.25::DECIMAL(10,2)),
	(2, -` + bigInt + `::BIGINT, -0.25::DOUBLE, 'comma, "quote"' || chr(10) || 'line', false, NULL, [], {'k': NULL, 's': NULL}, NULL),
	(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
) AS t(id, big, f, s, ok, stamp, tags, st, dec) ORDER BY id`

// TestFormatsAgree reads one answer in every format with a reader of that format and checks
// that each gives the same values, the integer above 2^53 exact in all of them.
func TestFormatsAgree(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	fetch := func(f Format) *http.Response {
		resp := get(t, ts.URL+"/v1/sql?"+url.Values{"q": {formatsQuery}, "format": {string(f)}}.Encode(), "")
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: status %d: %s", f, resp.StatusCode, b)
		}
		if got := resp.Header.Get("Content-Type"); got != f.MediaType() {
			t.Errorf("%s: Content-Type %q, want %q", f, got, f.MediaType())
		}
		if resp.Header.Get(HeaderRowCount) != "3" || resp.Header.Get(HeaderTruncated) != "false" {
			t.Errorf("%s: row count %q truncated %q, want 3 false", f, resp.Header.Get(HeaderRowCount), resp.Header.Get(HeaderTruncated))
		}
		return resp
	}
	// What every format must give, as JSON text of each row.
	want := []string{
		`{"id":1,"big":"` + bigInt + `","f":1.5,"s":"plain","ok":true,"stamp":"2026-01-02T03:04:05.123456Z","tags":["a","b"],"st":{"k":1,"s":"x"},"dec":12.25}`,
		`{"id":2,"big":"-` + bigInt + `","f":-0.25,"s":"comma, \"quote\"\nline","ok":false,"stamp":null,"tags":[],"st":{"k":null,"s":null},"dec":null}`,
		`{"id":3,"big":null,"f":null,"s":null,"ok":null,"stamp":null,"tags":null,"st":null,"dec":null}`,
	}

	t.Run("json", func(t *testing.T) {
		resp := fetch(FormatJSON)
		var cols []sqlguard.Column
		if err := json.Unmarshal([]byte(resp.Header.Get(HeaderColumns)), &cols); err != nil || len(cols) != 9 || cols[1].Type != "BIGINT" {
			t.Errorf("columns header %q (%v), want 9 columns, big BIGINT", resp.Header.Get(HeaderColumns), err)
		}
		var recs []json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if string(r) != want[i] {
				t.Errorf("record %d = %s\nwant       %s", i, r, want[i])
			}
		}
	})
	t.Run("jsonl", func(t *testing.T) {
		b, _ := io.ReadAll(fetch(FormatJSONL).Body)
		if got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("jsonl =\n%s\nwant\n%s", b, strings.Join(want, "\n"))
		}
	})
	t.Run("columns", func(t *testing.T) {
		tab, err := DecodeTable(fetch(FormatColumns).Body)
		if err != nil {
			t.Fatal(err)
		}
		if tab.RowCount != 3 || tab.Truncated || tab.Rows[0][1] != json.Number(bigInt) {
			t.Errorf("columns: %d rows, truncated %v, big %#v; want 3, false, json.Number %s", tab.RowCount, tab.Truncated, tab.Rows[0][1], bigInt)
		}
	})
	t.Run("csv", func(t *testing.T) {
		recs, err := csv.NewReader(fetch(FormatCSV).Body).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		wantCSV := [][]string{
			{"id", "big", "f", "s", "ok", "stamp", "tags", "st", "dec"},
			{"1", bigInt, "1.5", "plain", "true", "2026-01-02 03:04:05.123456Z", `["a","b"]`, `{"k":1,"s":"x"}`, "12.25"},
			{"2", "-" + bigInt, "-0.25", "comma, \"quote\"\nline", "false", "", "[]", `{"k":null,"s":null}`, ""},
			{"3", "", "", "", "", "", "", "", ""},
		}
		if got, _ := json.Marshal(recs); string(got) != mustJSON(wantCSV) {
			t.Errorf("csv = %s\nwant  %s", got, mustJSON(wantCSV))
		}
	})
	checkArrow := func(t *testing.T, rec arrow.RecordBatch) {
		t.Helper()
		if got := rec.Column(1).(*array.Int64).Value(0); strconv.FormatInt(got, 10) != bigInt {
			t.Errorf("big = %d, want %s", got, bigInt)
		}
		tags := rec.Column(6).(*array.List)
		if tags.ListValues().(*array.String).Value(1) != "b" || rec.Column(6).IsNull(2) != true {
			t.Errorf("tags = %v, want a list column [[a b] [] null]", tags)
		}
		st := rec.Column(7).(*array.Struct)
		if st.Field(0).(*array.Int32).Value(0) != 1 {
			t.Errorf("st = %v, want a struct with k 1", st)
		}
		if tz := rec.Schema().Field(5).Type.(*arrow.TimestampType).TimeZone; tz == "" {
			t.Error("stamp has no time zone")
		}
		if got, _ := rec.Schema().Field(1).Metadata.GetValue(MetaDuckDBType); got != "BIGINT" {
			t.Errorf("big metadata %q, want BIGINT", got)
		}
	}
	t.Run("arrow", func(t *testing.T) {
		rd, err := ipc.NewReader(fetch(FormatArrow).Body)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Release()
		if !rd.Next() {
			t.Fatalf("no batch: %v", rd.Err())
		}
		checkArrow(t, rd.RecordBatch())
	})
	t.Run("parquet", func(t *testing.T) {
		b, _ := io.ReadAll(fetch(FormatParquet).Body)
		pf, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		if v := pf.MetaData().KeyValueMetadata().FindValue(MetaTruncated); v == nil || *v != "false" {
			t.Errorf("footer %s = %v, want false", MetaTruncated, v)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		rec := array.NewTableReader(tbl, -1)
		defer rec.Release()
		if !rec.Next() {
			t.Fatal("no rows")
		}
		checkArrow(t, rec.RecordBatch())
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRequestShapes: GET with q or sql, POST with a JSON body (with or without its
// Content-Type) or a text body, and the format from the Accept header.
func TestRequestShapes(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	tests := []struct {
		name      string
		resp      func() *http.Response
		wantMedia string
	}{
		{"get q", func() *http.Response { return get(t, ts.URL+"/v1/sql?q=SELECT+42+AS+n", "") }, MediaJSON},
		{"get sql csv", func() *http.Response { return get(t, ts.URL+"/v1/sql?sql=SELECT+42+AS+n&format=csv", "") }, MediaCSV},
		{"json body", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", MediaJSON, `{"sql":"SELECT 42 AS n","format":"jsonl"}`)
		}, MediaJSONL},
		{"json body as a form (curl -d)", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", "application/x-www-form-urlencoded", `{"sql":"SELECT 42 AS n"}`)
		}, MediaJSON},
		{"text body", func() *http.Response { return post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT 42 AS n") }, MediaJSON},
		{"accept ndjson", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT 42 AS n", "Accept", "application/x-ndjson")
		}, MediaJSONL},
		{"accept parquet over csv by q", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT 42 AS n", "Accept", "text/csv;q=0.5, application/vnd.apache.parquet")
		}, MediaParquet},
		{"accept anything", func() *http.Response {
			return post(t, ts.URL+"/v1/sql", "", "text/plain", "SELECT 42 AS n", "Accept", "*/*")
		}, MediaJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.resp()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.wantMedia {
				t.Fatalf("status %d, Content-Type %q (%s); want 200 %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, tt.wantMedia)
			}
			if tt.wantMedia != MediaParquet && !bytes.Contains(b, []byte("42")) {
				t.Errorf("answer %q lacks 42", b)
			}
		})
	}
	// A JSON body is one object: anything after it is a bad request, not ignored.
	for _, body := range []string{`{"sql":"SELECT 42 AS n"}]`, `{"sql":"SELECT 42 AS n"} {"sql":"SELECT 1"}`} {
		resp := post(t, ts.URL+"/v1/sql", "", MediaJSON, body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("trailing data")) {
			t.Errorf("POST %s: status %d %s, want 400 naming the trailing data", body, resp.StatusCode, b)
		}
	}
	resp := get(t, ts.URL+"/v1/sql", "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET without q: status %d, want 400", resp.StatusCode)
	}
}

// TestTruncationReported: an answer cut by the row limit or the byte limit says so, in
// headers when it fits the server's first buffer and in trailers when it streams.
func TestTruncationReported(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ts, _ := newTestServer(t, "")
	tests := []struct {
		name        string
		q           string
		limit       string
		maxBytes    string
		format      Format
		wantRows    int
		wantBy      string
		wantTrailer bool
	}{
		{"rows, small", "SELECT i FROM range(100) t(i)", "10", "", FormatJSON, 10, CutRows, false},
		{"rows, streamed", "SELECT i, repeat('x', 100) AS pad FROM range(200000) t(i)", "150000", "", FormatCSV, 150000, CutRows, true},
		{"bytes, streamed", "SELECT i, repeat('x', 100) AS pad FROM range(200000) t(i)", "200000", "3000000", FormatJSONL, -1, CutBytes, true},
		{"all rows, streamed", "SELECT i FROM range(200000) t(i)", "200000", "", FormatCSV, 200000, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := url.Values{"q": {tt.q}, "format": {string(tt.format)}, "limit": {tt.limit}}
			if tt.maxBytes != "" {
				v.Set("max_bytes", tt.maxBytes)
			}
			resp := get(t, ts.URL+"/v1/sql?"+v.Encode(), "")
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			h := resp.Header
			if tt.wantTrailer {
				h = resp.Trailer
				if resp.Header.Get(HeaderTruncated) != "" {
					t.Errorf("a streamed answer has %s as a header", HeaderTruncated)
				}
			}
			wantTrunc := strconv.FormatBool(tt.wantBy != "")
			if h.Get(HeaderTruncated) != wantTrunc || h.Get(HeaderTruncatedBy) != tt.wantBy {
				t.Errorf("truncated %q by %q, want %s by %q", h.Get(HeaderTruncated), h.Get(HeaderTruncatedBy), wantTrunc, tt.wantBy)
			}
			lines := bytes.Count(body, []byte("\n"))
			if tt.format == FormatCSV {
				lines-- // the header
			}
			if tt.wantRows >= 0 && (tt.format != FormatJSON && lines != tt.wantRows || h.Get(HeaderRowCount) != strconv.Itoa(tt.wantRows)) {
				t.Errorf("%d lines, row count %q; want %d", lines, h.Get(HeaderRowCount), tt.wantRows)
			}
			if tt.maxBytes != "" {
				max, _ := strconv.Atoi(tt.maxBytes)
				if len(body) > max || len(body) < max*9/10 {
					t.Errorf("answer of %d bytes with max_bytes %d, want just under it", len(body), max)
				}
				if h.Get(HeaderRowCount) != strconv.Itoa(lines) {
					t.Errorf("row count %q, %d lines", h.Get(HeaderRowCount), lines)
				}
			}
		})
	}
}

// TestSchemaAndHints: GET /v1/schema lists the public tables and views with their columns and
// descriptions, none of the internal ones; an error's hint never names an internal table.
func TestSchemaAndHints(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	db, spool := newProjectionDB(t)
	s, err := NewServer(db, Config{ExportSpool: spool})
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(t, s)
	resp := get(t, ts.URL+"/v1/schema", "")
	var sch struct {
		Tables []SchemaTable `json:"tables"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sch); err != nil {
		t.Fatal(err)
	}
	byName := map[string]SchemaTable{}
	for _, tb := range sch.Tables {
		byName[tb.Name] = tb
	}
	for _, hidden := range []string{"ingest_state", "run_folds"} {
		if _, ok := byName[hidden]; ok {
			t.Errorf("/v1/schema lists internal %s", hidden)
		}
	}
	runs, ok := byName["runs"]
	if !ok || runs.Kind != "view" || !strings.HasPrefix(runs.Description, "one row per run attempt") || len(runs.Columns) < 10 {
		t.Fatalf("runs = %+v", runs)
	}
	if len(sch.Tables) != 15 {
		t.Errorf("%d tables, want the 15 public ones", len(sch.Tables))
	}
	for _, c := range byName["cells"].Columns {
		if c.Name == "expected_runs" && c.Type != "BIGINT" {
			t.Errorf("cells.expected_runs is %s, want BIGINT", c.Type)
		}
	}

	for _, tt := range []struct{ q, wantHint, notHint string }{
		{"SELECT * FROM ingest_stat", "", "ingest_state"},
		{"SELECT * FROM run_fold", "", "run_folds"},
		{"SELECT * FROM rnus", "runs", ""},
	} {
		resp := post(t, ts.URL+"/v1/sql", "", "text/plain", tt.q)
		var eb ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		if resp.StatusCode != http.StatusUnprocessableEntity || eb.Kind != "query" {
			t.Errorf("%s: status %d kind %q, want 422 query", tt.q, resp.StatusCode, eb.Kind)
		}
		if tt.notHint != "" && strings.Contains(eb.Error, `"`+tt.notHint+`"`) {
			t.Errorf("%s: error %q names internal %s", tt.q, eb.Error, tt.notHint)
		}
		if tt.wantHint != "" && !strings.Contains(eb.Error, `Did you mean "`+tt.wantHint+`"`) {
			t.Errorf("%s: error %q, want the hint %q", tt.q, eb.Error, tt.wantHint)
		}
	}
}

func TestUnhint(t *testing.T) {
	s := &Server{cfg: Config{Public: queries.Public(), Hidden: queries.Internal()}}
	tests := []struct{ give, want string }{
		{"Catalog Error: Table with name ingest_stat does not exist!\nDid you mean \"ingest_state\"?\n\nLINE 1: x",
			"Catalog Error: Table with name ingest_stat does not exist!\n\nLINE 1: x"},
		{"Catalog Error: Table with name run_fold does not exist!\nDid you mean \"main.run_folds\"?",
			"Catalog Error: Table with name run_fold does not exist!"},
		{"Catalog Error: Table with name rnus does not exist!\nDid you mean \"runs\"?",
			"Catalog Error: Table with name rnus does not exist!\nDid you mean \"runs\"?"},
	}
	for _, tt := range tests {
		got := s.unhint(fmt.Errorf("%w: %s", sqlguard.ErrQuery, tt.give))
		if got.Error() != "sqlguard: query failed: "+tt.want || !errors.Is(got, sqlguard.ErrQuery) {
			t.Errorf("unhint(%q) = %q, want %q (still ErrQuery)", tt.give, got, tt.want)
		}
	}
}

// TestDefaultHiddenNamesTheIngesterViews: by default no hint names the ingester's Arrow views,
// which the ingesting database holds (their streams gone once it stops).
func TestDefaultHiddenNamesTheIngesterViews(t *testing.T) {
	db, spool := newProjectionDB(t)
	s, err := NewServer(db, Config{ExportSpool: spool})
	if err != nil {
		t.Fatal(err)
	}
	for _, view := range []string{"ingest_batch", "ingest_folds"} {
		give := "Catalog Error: Table with name ingest_fold does not exist!\nDid you mean \"" + view + "\"?"
		got := s.unhint(fmt.Errorf("%w: %s", sqlguard.ErrQuery, give))
		if strings.Contains(got.Error(), view) {
			t.Errorf("unhint(%q) = %q, names %s", give, got, view)
		}
	}
}
