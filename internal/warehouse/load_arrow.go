//go:build duckdb_arrow

package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
)

// LoadPath names how batches reach DuckDB in this build: "arrow" (build tag duckdb_arrow, a
// registered Arrow view scanned by INSERT … SELECT) or "appender".
const LoadPath = "arrow"

// loadEvents stores a record batch of events through a registered Arrow view. The view's
// release function frees the exported C stream once the INSERT has scanned it.
func loadEvents(ctx context.Context, conn *sql.Conn, rec arrow.RecordBatch) error {
	return conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rdr, err := array.NewRecordReader(eventsSchema, []arrow.RecordBatch{rec})
		if err != nil {
			return err
		}
		defer rdr.Release()
		release, err := a.RegisterView(rdr, "ingest_batch")
		if err != nil {
			return fmt.Errorf("register arrow view: %w", err)
		}
		defer release()
		_, err = dc.(driver.ExecerContext).ExecContext(ctx, queries.IngestEvents.SQL, nil)
		return err
	})
}
