package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/queries"
)

// reader runs the console's statements (queries.Console*) and, for the metrics and the
// reports, the analysis's and report's statements through the same read-only guard as the query
// API: a parse-only SELECT check, a read-only transaction that is always rolled back, a
// timeout. The console never writes.
type reader struct {
	guard *sqlguard.Guard
	rows  int // row limit of a page's statement
}

var _ analysis.Querier = (*reader)(nil)

// query runs s with args and returns its rows as sqlguard.Guard.Query gives them (int64,
// int32, float64, string, bool, nil, json.RawMessage for lists), and whether the row limit cut
// them.
func (r *reader) query(ctx context.Context, s queries.Statement, args ...any) ([][]any, bool, error) {
	res, err := r.guard.Query(ctx, s.SQL, sqlguard.Limits{Rows: r.rows}, args...)
	if err != nil {
		return nil, false, fmt.Errorf("console: %s: %w", s.Name, err)
	}
	return res.Rows, res.Truncated, nil
}

// Query implements analysis.Querier (the metrics and the report read through it): lists arrive
// decoded ([]any), numbers as the guard gives them. Every row is read: a statement cut by the
// row cap is an error, never a silently smaller study.
func (r *reader) Query(ctx context.Context, s queries.Statement, args []any, fn func(row []any) error) error {
	res, err := r.guard.Query(ctx, s.SQL, sqlguard.Limits{Rows: sqlguard.DefaultRowsCap, Bytes: sqlguard.DefaultBytesCap,
		Timeout: analysisTimeout}, args...)
	if err != nil {
		return fmt.Errorf("console: %s: %w", s.Name, err)
	}
	if res.Truncated {
		return fmt.Errorf("console: %s: more than %d rows; compute this study's metrics with `analyzer metrics` on the file",
			s.Name, len(res.Rows))
	}
	for _, row := range res.Rows {
		for i, v := range row {
			if t, ok := v.(string); ok && wideNumber(res.Columns[i].Type) {
				// HUGEINT and DECIMAL arrive as their decimal text; the analysis reads numbers.
				row[i] = json.Number(t)
				continue
			}
			if raw, ok := v.(json.RawMessage); ok {
				d := json.NewDecoder(bytes.NewReader(raw))
				d.UseNumber()
				var x any
				if err := d.Decode(&x); err != nil {
					return fmt.Errorf("console: %s: column %d: %w", s.Name, i, err)
				}
				row[i] = x
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

// wideNumber reports whether a DuckDB type reaches Go as decimal text: HUGEINT, UHUGEINT,
// DECIMAL(p,s).
func wideNumber(typ string) bool {
	return typ == "HUGEINT" || typ == "UHUGEINT" || strings.HasPrefix(typ, "DECIMAL")
}

// analysisTimeout bounds each statement of a metrics computation.
const analysisTimeout = 2 * time.Minute

// Value readers of the guard's rows. A NULL reads as the zero value.

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.RawMessage:
		return string(x)
	case []byte:
		return string(x)
	}
	return ""
}

func integer(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case uint64:
		return int64(x)
	case uint32:
		return int64(x)
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return 0
}

func float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case nil:
		return 0, false
	}
	return float64(integer(v)), true
}

func boolean(v any) bool {
	b, _ := v.(bool)
	return b
}

// strings decodes a list column (json.RawMessage of a JSON array of strings).
func stringList(v any) []string {
	var out []string
	switch x := v.(type) {
	case json.RawMessage:
		_ = json.Unmarshal(x, &out)
	case []any:
		for _, e := range x {
			s, _ := e.(string)
			out = append(out, s)
		}
	}
	return out
}

// micros reads microseconds since the epoch as a time (zero for NULL).
func micros(v any) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.UnixMicro(integer(v)).UTC()
}
