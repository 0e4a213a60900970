//go:build duckdb_arrow

package analysis

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dittolab/ditto/internal/duckconn"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
)

// txQuerier is the Querier of Snapshot: tx's, and Arrow record batches from the connection
// that holds tx when it is DuckDB's.
func txQuerier(conn *sql.Conn, tx *sql.Tx) Querier {
	duck := false
	_ = conn.Raw(func(dc any) error {
		duck = duckconn.Driver(dc) != nil
		return nil
	})
	if !duck {
		return SQLQuerier(tx)
	}
	return arrowQuerier{sqlQuerier{tx}, conn}
}

// arrowQuerier runs statements in a transaction, through database/sql or, for QueryBatches,
// through the driver's Arrow interface on the transaction's connection (DuckDB's transactions
// are the connection's, so both see the same snapshot).
type arrowQuerier struct {
	sqlQuerier
	conn *sql.Conn
}

func (q arrowQuerier) QueryBatches(ctx context.Context, st queries.Statement, args []any, fn func(arrow.RecordBatch) error) error {
	return q.conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(duckconn.Driver(dc))
		if err != nil {
			return fmt.Errorf("analysis: %s: %w", st.Name, err)
		}
		rr, err := a.QueryContext(ctx, st.SQL, args...)
		if err != nil {
			return fmt.Errorf("analysis: %s: %w", st.Name, err)
		}
		defer rr.Release()
		for rr.Next() {
			if err := fn(rr.RecordBatch()); err != nil {
				return err
			}
		}
		if err := rr.Err(); err != nil {
			return fmt.Errorf("analysis: %s: %w", st.Name, err)
		}
		return nil
	})
}
