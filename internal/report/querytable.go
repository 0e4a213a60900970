package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/dittolab/ditto/internal/queryapi"
)

// maxCellWidth bounds a table cell; longer values end in "…".
const maxCellWidth = 60

// WriteQueryTable prints a query's answer as an aligned text table (what `analyzer sql`
// prints by default): a header, a rule, the rows and a closing line giving the row count (and
// whether the answer was cut at the row limit). Numbers are right-aligned, a DOUBLE or FLOAT
// rounded by Decimal (5551.3926, not 5551.392600000001); NULL prints as NULL.
func WriteQueryTable(w io.Writer, t *queryapi.Table) error {
	n := len(t.Columns)
	cells := make([][]string, len(t.Rows))
	width := make([]int, n)
	numeric := make([]bool, n)
	float := make([]bool, n)
	for j, c := range t.Columns {
		width[j] = utf8.RuneCountInString(c.Name)
		numeric[j] = isNumericType(c.Type)
		float[j] = c.Type == "DOUBLE" || c.Type == "FLOAT"
	}
	for i, row := range t.Rows {
		cells[i] = make([]string, n)
		for j := 0; j < n && j < len(row); j++ {
			s := cellText(row[j], float[j])
			if utf8.RuneCountInString(s) > maxCellWidth {
				s = string([]rune(s)[:maxCellWidth-1]) + "…"
			}
			cells[i][j] = s
			width[j] = max(width[j], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	line := func(vals []string, rightAlign bool) {
		for j, v := range vals {
			if j > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(v))
			if rightAlign && numeric[j] {
				b.WriteString(pad + v)
			} else if j < n-1 {
				b.WriteString(v + pad)
			} else {
				b.WriteString(v)
			}
		}
		b.WriteString("\n")
	}
	header := make([]string, n)
	rule := make([]string, n)
	for j, c := range t.Columns {
		header[j] = c.Name
		rule[j] = strings.Repeat("-", width[j])
	}
	line(header, false)
	line(rule, false)
	for _, row := range cells {
		line(row, true)
	}
	switch {
	case t.Truncated:
		fmt.Fprintf(&b, "(%d rows shown; the result has more — raise --limit)\n", len(t.Rows))
	case len(t.Rows) == 1:
		b.WriteString("(1 row)\n")
	default:
		fmt.Fprintf(&b, "(%d rows)\n", len(t.Rows))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cellText renders a JSON value of a queryapi.Table for a text table; a number of a float
// column is rounded by Decimal.
func cellText(v any, float bool) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case json.Number:
		if f, err := x.Float64(); err == nil && float {
			return Decimal(f)
		}
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return Decimal(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func isNumericType(dbType string) bool {
	if i := strings.IndexByte(dbType, '('); i >= 0 {
		dbType = dbType[:i]
	}
	switch dbType {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL":
		return true
	}
	return false
}
