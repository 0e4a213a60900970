//go:build !duckdb_arrow

package sqlguard

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// CanStream reports whether this build can answer queries (Stream): only with the duckdb_arrow
// build tag.
const CanStream = false

// openStream needs DuckDB's Arrow conversion, compiled into the driver only with the
// duckdb_arrow build tag.
func openStream(context.Context, any, string, []any) (batchSource, []Column, *arrow.Schema, error) {
	return nil, nil, nil, ErrNoArrow
}
