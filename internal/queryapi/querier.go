package queryapi

import (
	"context"
	"fmt"

	"github.com/dittolab/ditto/queries"
)

// QuerierRowLimit is the row limit a Querier asks for; the server caps it (sqlguard's
// RowsCap, 1,000,000 by default), and an answer cut at the cap is ErrTruncated.
const QuerierRowLimit = 1_000_000

// QuerierByteLimit is the answer size a Querier asks for; the server caps it (sqlguard's
// BytesCap, 1 GiB by default).
const QuerierByteLimit = 1 << 30

// Querier runs the read statements of package queries through POST /v1/sql, their
// parameters ($1, $2, …) sent as the request's params: the analysis and the reports read
// through it when another process holds the database file. It has the method set of
// analysis.Querier. The API keeps no snapshot across requests, so two statements may see
// different data; analysis.ComputeFrom retries a load that changed underneath it. A Querier
// cannot write.
type Querier struct{ c *Client }

// Querier returns a Querier that sends its statements through c.
func (c *Client) Querier() *Querier { return &Querier{c} }

// Query runs s with args (strings, integers, booleans, nil) and calls fn once per row, in
// the statement's order; numbers arrive as json.Number, nested values as []any or
// map[string]any. An error from fn stops the rows and is returned. A result larger than
// QuerierRowLimit (or the server's cap) is an error wrapping ErrTruncated.
func (q *Querier) Query(ctx context.Context, s queries.Statement, args []any, fn func(row []any) error) error {
	t, err := q.c.Query(ctx, SQLRequest{SQL: s.SQL, Params: args, Limit: QuerierRowLimit, MaxBytes: QuerierByteLimit})
	if err != nil {
		return fmt.Errorf("api: %s: %w", s.Name, err)
	}
	if t.Truncated {
		return fmt.Errorf("%w: %s was cut at the server's %s limit after %d rows; read the database file instead (where no analyzer holds it open)",
			ErrTruncated, s.Name, t.TruncatedBy, len(t.Rows))
	}
	for _, r := range t.Rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
