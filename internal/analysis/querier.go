package analysis

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/dittolab/ditto/queries"
)

// Querier runs the analysis's read statements (queries.Analysis*). Query calls fn once per
// row, in the statement's order; row holds the row's values as database/sql scans them into
// any (string, int64, int32, float64, bool, []any, nil) or as JSON decodes them (json.Number,
// string, bool, []any, nil), and is only valid during the call. An error from fn stops the
// query and is returned. Implementations need not be safe for concurrent use.
type Querier interface {
	Query(ctx context.Context, s queries.Statement, args []any, fn func(row []any) error) error
}

// queryContexter is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type queryContexter interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQLQuerier runs the statements on a database, a connection or a transaction. Run inside one
// transaction, every statement of a load sees the same snapshot (Snapshot gives one, which also
// reads large results as Arrow record batches where it can).
func SQLQuerier(q queryContexter) Querier { return sqlQuerier{q} }

type sqlQuerier struct{ q queryContexter }

func (s sqlQuerier) Query(ctx context.Context, st queries.Statement, args []any, fn func([]any) error) error {
	rows, err := s.q.QueryContext(ctx, st.SQL, args...)
	if err != nil {
		return fmt.Errorf("analysis: %s: %w", st.Name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("analysis: %s: %w", st.Name, err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("analysis: %s: %w", st.Name, err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("analysis: %s: %w", st.Name, err)
	}
	return nil
}

// Value conversions shared by both kinds of Querier. They return an error naming the column
// rather than guessing: a type mismatch means the statement and this code disagree.

func colErr(col string, v any) error {
	return fmt.Errorf("analysis: column %s: unexpected value %v (%T)", col, v, v)
}

func asString(col string, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	return "", colErr(col, v)
}

func asInt(col string, v any) (int64, bool, error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return x, true, nil
	case int32:
		return int64(x), true, nil
	case int:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, false, colErr(col, v)
		}
		return int64(x), true, nil
	case uint32:
		return int64(x), true, nil
	case float64:
		if x != math.Trunc(x) {
			return 0, false, colErr(col, v)
		}
		return int64(x), true, nil
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return 0, false, colErr(col, v)
		}
		return n, true, nil
	case fmt.Stringer: // *big.Int (HUGEINT sums)
		n, err := strconv.ParseInt(x.String(), 10, 64)
		if err != nil {
			return 0, false, colErr(col, v)
		}
		return n, true, nil
	}
	return 0, false, colErr(col, v)
}

func asFloat(col string, v any) (float64, bool, error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case float64:
		return x, true, nil
	case float32:
		return float64(x), true, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false, colErr(col, v)
		}
		return f, true, nil
	}
	n, ok, err := asInt(col, v)
	return float64(n), ok, err
}

func asBool(col string, v any) (bool, error) {
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	}
	return false, colErr(col, v)
}

func asStrings(col string, v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return []string{}, nil
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, colErr(col, v)
			}
			out[i] = s
		}
		return out, nil
	case string: // a list rendered as JSON text
		var out []string
		if err := json.Unmarshal([]byte(x), &out); err != nil {
			return nil, colErr(col, v)
		}
		if out == nil {
			out = []string{}
		}
		return out, nil
	}
	return nil, colErr(col, v)
}

// row reads a row's columns by position and keeps the first error.
type row struct {
	vals []any
	cols []string
	err  error
}

func (r *row) str(i int) string {
	s, err := asString(r.cols[i], r.vals[i])
	r.keep(err)
	return s
}

func (r *row) int(i int) int64 {
	n, _, err := asInt(r.cols[i], r.vals[i])
	r.keep(err)
	return n
}

func (r *row) optInt(i int) *int64 {
	n, ok, err := asInt(r.cols[i], r.vals[i])
	r.keep(err)
	if !ok {
		return nil
	}
	return &n
}

func (r *row) float(i int) float64 {
	f, _, err := asFloat(r.cols[i], r.vals[i])
	r.keep(err)
	return f
}

func (r *row) bool(i int) bool {
	b, err := asBool(r.cols[i], r.vals[i])
	r.keep(err)
	return b
}

func (r *row) strings(i int) []string {
	s, err := asStrings(r.cols[i], r.vals[i])
	r.keep(err)
	return s
}

func (r *row) keep(err error) {
	if r.err == nil {
		r.err = err
	}
}
