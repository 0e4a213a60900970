package queryapi

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
)

// The driver hands out Go values (int32, time.Time, duckdb.Decimal, []any, map[string]any,
// duckdb.OrderedMap, …). jsonValue and textValue render them the same way for every output:
// JSON keeps numbers and nesting; text (CSV and tables) writes scalars as DuckDB prints them
// and nested values as their JSON.

// baseType is a DuckDB type name without its parameters: DECIMAL(10,2) → DECIMAL.
func baseType(dbType string) string {
	if i := strings.IndexByte(dbType, '('); i >= 0 {
		return dbType[:i]
	}
	return dbType
}

// nested reports whether a DuckDB type is a list, array, struct, map, union or JSON.
func nested(dbType string) bool {
	switch {
	case strings.HasSuffix(dbType, "]"), dbType == "JSON":
		return true
	}
	switch baseType(dbType) {
	case "STRUCT", "MAP", "UNION", "LIST", "ARRAY":
		return true
	}
	return false
}

// jsonValue returns v as a value encoding/json writes faithfully.
func jsonValue(v any, dbType string) any {
	switch x := v.(type) {
	case nil, bool, string,
		int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return x
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case *big.Int:
		return json.Number(x.String())
	case duckdb.Decimal:
		return json.Number(x.String())
	case time.Time:
		return timeText(x, dbType, true)
	case duckdb.Interval:
		return intervalText(x)
	case []byte:
		if dbType == "UUID" && len(x) == 16 {
			return uuidText(x)
		}
		return x // base64, encoding/json's rule for bytes
	case duckdb.UUID:
		return uuidText(x[:])
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e, "")
		}
		return out
	case duckdb.OrderedMap:
		keys, vals := x.Keys(), x.Values()
		out := make([]any, len(keys))
		for i := range keys {
			out[i] = map[string]any{"key": jsonValue(keys[i], ""), "value": jsonValue(vals[i], "")}
		}
		return out
	case duckdb.Map:
		out := make([]any, 0, len(x))
		for k, e := range x {
			out = append(out, map[string]any{"key": jsonValue(k, ""), "value": jsonValue(e, "")})
		}
		return out
	case duckdb.Union:
		return map[string]any{"tag": x.Tag, "value": jsonValue(x.Value, "")}
	default:
		return fmt.Sprint(x)
	}
}

// jsonFloat keeps NaN and infinities, which JSON numbers cannot carry, as strings.
func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

// textValue returns v as one CSV field or table cell; NULL is "" for CSV and "NULL" for
// tables, which is the caller's choice (ok is false for NULL).
func textValue(v any, dbType string) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case float32:
		return fmt.Sprint(x), true
	case float64:
		return fmt.Sprint(x), true
	case time.Time:
		return timeText(x, dbType, false), true
	case []byte:
		if dbType == "UUID" && len(x) == 16 {
			return uuidText(x), true
		}
		return blobText(x), true
	}
	if nested(dbType) {
		b, err := json.Marshal(jsonValue(v, dbType))
		if err != nil {
			return fmt.Sprint(v), true
		}
		return string(b), true
	}
	switch j := jsonValue(v, dbType).(type) {
	case string:
		return j, true
	case json.Number:
		return j.String(), true
	default:
		b, err := json.Marshal(j)
		if err != nil {
			return fmt.Sprint(v), true
		}
		return string(b), true
	}
}

// timeText formats a DATE, TIME or TIMESTAMP value. JSON gets RFC 3339 timestamps; text gets
// DuckDB's own rendering (a space between date and time).
func timeText(t time.Time, dbType string, forJSON bool) string {
	switch baseType(dbType) {
	case "DATE":
		return t.Format("2006-01-02")
	case "TIME", "TIMETZ":
		return t.Format("15:04:05.999999")
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS":
		if forJSON {
			return t.Format("2006-01-02T15:04:05.999999999")
		}
		return t.Format("2006-01-02 15:04:05.999999999")
	}
	if forJSON {
		return t.Format(time.RFC3339Nano)
	}
	return t.Format("2006-01-02 15:04:05.999999999Z07:00")
}

func intervalText(iv duckdb.Interval) string {
	var parts []string
	if iv.Months != 0 {
		parts = append(parts, fmt.Sprintf("%d months", iv.Months))
	}
	if iv.Days != 0 {
		parts = append(parts, fmt.Sprintf("%d days", iv.Days))
	}
	if iv.Micros != 0 || len(parts) == 0 {
		parts = append(parts, (time.Duration(iv.Micros) * time.Microsecond).String())
	}
	return strings.Join(parts, " ")
}

func uuidText(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// blobText writes printable ASCII as is and other bytes as \xHH, as DuckDB prints a BLOB.
func blobText(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return string(b)
	}
	var sb strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "\\x%02X", c)
		}
	}
	return sb.String()
}
