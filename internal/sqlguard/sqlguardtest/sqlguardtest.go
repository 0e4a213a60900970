// Package sqlguardtest is for tests of what answers SQL queries through sqlguard.
package sqlguardtest

import (
	"testing"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// NeedsQueries skips a test that answers SQL queries (sqlguard's Stream: the query API, the
// console's pages, reports and metrics read through them) in a build without the duckdb_arrow
// tag, where every query fails with sqlguard.ErrNoArrow: a plain `go test ./...` then says why
// those tests did not run instead of failing them. `make test` builds with the tag.
func NeedsQueries(tb testing.TB) {
	tb.Helper()
	if !sqlguard.CanStream {
		tb.Skip("answers SQL queries, which needs the duckdb_arrow build tag (make test, or go test -tags duckdb_arrow)")
	}
}
