package queryapi

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/queries"
)

// newProjectionDB makes a DuckDB file with the projection's schema (queries.Schema) and the
// tables `analyzer metrics` writes, hardened as serve's is, and returns it with its spool.
func newProjectionDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("duckdb", filepath.Join(dir, "ditto.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range append(queries.Schema(), queries.AnalysisTableMetrics, queries.AnalysisTableComparisons) {
		if _, err := db.Exec(s.SQL); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	spool := filepath.Join(dir, "spool")
	if err := sqlguard.Harden(context.Background(), db, spool); err != nil {
		t.Fatal(err)
	}
	return db, spool
}

// columnTypes returns "name TYPE" for each column of a query's answer, as DESCRIBE gives them.
func columnTypes(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query("DESCRIBE " + query)
	if err != nil {
		t.Fatalf("DESCRIBE %s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rows.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		out = append(out, name+" "+typ)
	}
	return out
}

// TestExportKeepsTypes: every column of every public table and view has the same type in the
// Parquet export as live.
func TestExportKeepsTypes(t *testing.T) {
	db, spool := newProjectionDB(t)
	var public []string
	for _, o := range queries.Public() {
		public = append(public, o.Name)
	}
	dir := filepath.Join(spool, "export")
	m, err := Export(context.Background(), db, dir, public)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != len(public) {
		t.Fatalf("exported %d tables, want %d", len(m.Tables), len(public))
	}
	reader, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, et := range m.Tables {
		live := columnTypes(t, db, "SELECT * FROM "+et.Name)
		exported := columnTypes(t, reader, fmt.Sprintf("SELECT * FROM read_parquet('%s')", filepath.Join(dir, et.Path)))
		if strings.Join(live, ", ") != strings.Join(exported, ", ") {
			for i := range max(len(live), len(exported)) {
				var l, e string
				if i < len(live) {
					l = live[i]
				}
				if i < len(exported) {
					e = exported[i]
				}
				if l != e {
					t.Errorf("%s: live %q, Parquet %q", et.Name, l, e)
				}
			}
		}
	}
}

// TestNoSentinels: a run without output has NULL in runs.output, not a sentinel string.
func TestNoSentinels(t *testing.T) {
	db, _ := newProjectionDB(t)
	rows, err := db.Query(`SELECT column_name, data_type FROM duckdb_columns()
		WHERE table_name = 'run_fold_rows' AND NOT is_nullable ORDER BY column_index`)
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		v := map[string]string{"VARCHAR": "'x'", "BOOLEAN": "false", "VARCHAR[]": "[]",
			"TIMESTAMP WITH TIME ZONE": "now()", "BLOB": "'x'::BLOB"}[typ]
		if v == "" {
			v = "0"
		}
		if name == "output" {
			v = "'<none>'" // what the fold stores for a run without output
		}
		if name == "states" || name == "tools" {
			v = "'[]'" // stored as a JSON array
		}
		values = append(values, v+" AS "+name)
	}
	rows.Close()
	insert := "INSERT INTO run_fold_rows BY NAME SELECT " + strings.Join(values, ", ")
	if _, err := db.Exec(insert); err != nil {
		t.Fatalf("%s: %v", insert, err)
	}
	var output sql.NullString
	if err := db.QueryRow("SELECT output FROM runs").Scan(&output); err != nil {
		t.Fatal(err)
	}
	if output.Valid {
		t.Errorf("runs.output = %q for a run without output, want NULL", output.String)
	}
}
