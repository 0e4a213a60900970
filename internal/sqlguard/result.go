package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrQuery wraps an error DuckDB reported for the user's query (a binder, catalog or
// runtime error): the query's fault, not the service's.
var ErrQuery = errors.New("sqlguard: query failed")

// Column is one result column.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"` // DuckDB's type name: INTEGER, VARCHAR, TIMESTAMP WITH TIME ZONE, DECIMAL(10,2), STRUCT(…), …
}

// Result is a query's rows, as the DuckDB driver returns them (int32, string, time.Time,
// duckdb.Decimal, []any, map[string]any, …).
type Result struct {
	Columns   []Column
	Rows      [][]any
	Truncated bool          // the query had more rows than the limit
	Elapsed   time.Duration // check, run and read
}

// scan runs text on conn and reads at most limit rows (one more tells Truncated).
func scan(ctx context.Context, conn *sql.Conn, text string, limit int, args []any) (*Result, error) {
	rows, err := conn.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrQuery, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrQuery, err)
	}
	res := &Result{Columns: make([]Column, len(types))}
	for i, t := range types {
		res.Columns[i] = Column{Name: t.Name(), Type: t.DatabaseTypeName()}
	}
	ptrs := make([]any, len(types))
	for rows.Next() {
		if len(res.Rows) == limit {
			res.Truncated = true
			break
		}
		vals := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrQuery, err)
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrQuery, err)
	}
	return res, nil
}
