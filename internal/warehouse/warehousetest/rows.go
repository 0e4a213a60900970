package warehousetest

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/queries"
)

// Rows renders each row as one line "col=value | col=value" (values by FormatValue), in the
// order the query returned them, and closes rows.
func Rows(t testing.TB, rows *sql.Rows) []string {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
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
			parts[i] = cols[i] + "=" + FormatValue(v)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Dump returns the content of a table or view as Rows lines, sorted, for comparisons that do
// not depend on row order.
func Dump(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	out := Rows(t, rows)
	sort.Strings(out)
	return out
}

// FormatValue renders a scanned value stably: NULL, quoted bytes, UTC RFC 3339 times and floats
// with six significant digits.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("%q", x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return fmt.Sprintf("%.6g", x)
	}
	return fmt.Sprint(v)
}

// Querier is what Run needs of a *sql.DB or *sql.Tx.
type Querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
	Exec(query string, args ...any) (sql.Result, error)
}

// Run executes s with args on q and renders the result: the Rows lines of a statement that
// reads (its body, past the header comment, starts with SELECT or WITH), joined by newlines, or
// "rows affected: N" for one that writes.
func Run(t testing.TB, q Querier, s queries.Statement, args []any) string {
	t.Helper()
	body := strings.ToUpper(strings.TrimSpace(stripHeader(s.SQL)))
	if strings.HasPrefix(body, "SELECT") || strings.HasPrefix(body, "WITH") {
		rows, err := q.Query(s.SQL, args...)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		return strings.Join(Rows(t, rows), "\n")
	}
	res, err := q.Exec(s.SQL, args...)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	n, _ := res.RowsAffected()
	return fmt.Sprintf("rows affected: %d", n)
}

// stripHeader drops the comment lines (the header naming inputs and outputs).
func stripHeader(q string) string {
	var b strings.Builder
	for _, line := range strings.Split(q, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// Count runs a query that returns one integer (a count) and returns it.
func Count(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Strings runs a query that returns one string column and returns its values in order.
func Strings(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
