package sqlguard

import (
	"errors"
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

// Result is a whole answer of Query.
type Result struct {
	Columns   []Column
	Rows      [][]any
	Truncated bool          // the row or byte limit cut the answer
	Elapsed   time.Duration // check, run and read
}
