package queryapi

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Answers are rendered from Arrow arrays, as DuckDB converts its types (package sqlguard), by
// two functions that every text format shares:
//
//   - appendJSON writes a JSON value: numbers as numbers, except integers beyond ±2^53 and
//     decimals of more than 15 significant digits, which a JSON reader would round to a
//     double: those are strings of their exact digits (the column's type, in the answer's
//     columns, says what they are). NaN and infinities are strings too. Lists are arrays,
//     structs objects, maps arrays of {"key", "value"}, timestamps RFC 3339 (with Z when the
//     type has a zone), dates 2006-01-02, blobs base64 (encoding/json's rule).
//   - appendText writes a CSV field: scalars as DuckDB prints them (a space between date and
//     time), nested values as their JSON; ok is false for NULL.

// maxExactInt is the largest integer every JSON reader (a float64) holds exactly.
const maxExactInt = 1 << 53

// appendJSON appends element i of arr as JSON. rawJSON says that a string holds JSON text
// (DuckDB's JSON type), written as is when it is valid.
func appendJSON(b []byte, arr arrow.Array, i int, rawJSON bool) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int64:
		v := a.Value(i)
		if v > maxExactInt || v < -maxExactInt {
			b = append(b, '"')
			return append(strconv.AppendInt(b, v, 10), '"')
		}
		return strconv.AppendInt(b, v, 10)
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint64:
		v := a.Value(i)
		if v > maxExactInt {
			b = append(b, '"')
			return append(strconv.AppendUint(b, v, 10), '"')
		}
		return strconv.AppendUint(b, v, 10)
	case *array.Float16:
		return appendJSONFloat(b, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendJSONFloat(b, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendJSONFloat(b, a.Value(i), 64)
	case *array.Decimal128:
		return appendJSONDecimal(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Decimal256:
		return appendJSONDecimal(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale))
	case *array.String:
		return appendStringOrJSON(b, a.Value(i), rawJSON)
	case *array.LargeString:
		return appendStringOrJSON(b, a.Value(i), rawJSON)
	case *array.StringView:
		return appendStringOrJSON(b, a.Value(i), rawJSON)
	case *array.Binary:
		return appendJSONBytes(b, a.Value(i))
	case *array.LargeBinary:
		return appendJSONBytes(b, a.Value(i))
	case *array.BinaryView:
		return appendJSONBytes(b, a.Value(i))
	case *array.FixedSizeBinary:
		return appendJSONBytes(b, a.Value(i))
	case array.ListLike:
		// Lists, fixed-size lists, list views and maps (a map is a list of {key, value}
		// structs, rendered as that list).
		start, end := a.ValueOffsets(i)
		return appendJSONList(b, a.ListValues(), start, end)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for j := range a.NumField() {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Field(j).Name)
			b = append(b, ':')
			b = appendJSON(b, a.Field(j), i, false)
		}
		return append(b, '}')
	case *array.Dictionary:
		return appendJSON(b, a.Dictionary(), a.GetValueIndex(i), rawJSON)
	case *array.SparseUnion:
		return appendJSON(b, a.Field(a.ChildID(i)), i, false)
	case *array.DenseUnion:
		return appendJSON(b, a.Field(a.ChildID(i)), int(a.ValueOffset(i)), false)
	}
	return appendJSONString(b, scalarText(arr, i, true))
}

func appendJSONList(b []byte, values arrow.Array, start, end int64) []byte {
	b = append(b, '[')
	for k := start; k < end; k++ {
		if k > start {
			b = append(b, ',')
		}
		b = appendJSON(b, values, int(k), false)
	}
	return append(b, ']')
}

// appendJSONFloat keeps NaN and infinities, which JSON numbers cannot carry, as strings.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendJSONString(b, fmt.Sprint(f))
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendJSONDecimal writes a decimal's exact text as a number when a double holds it (15
// significant digits), else as a string.
func appendJSONDecimal(b []byte, s string) []byte {
	digits := 0
	leading := true
	for _, c := range s {
		if c >= '1' && c <= '9' || c == '0' && !leading {
			digits++
			leading = false
		}
	}
	if digits > 15 {
		return appendJSONString(b, s)
	}
	return append(b, s...)
}

func appendJSONBytes(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendStringOrJSON writes s as a JSON string, or as is when it is JSON text of a JSON column.
func appendStringOrJSON(b []byte, s string, rawJSON bool) []byte {
	if rawJSON && jsonValid(s) {
		return append(b, s...)
	}
	return appendJSONString(b, s)
}

// appendJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript; escape them as
		// encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendText appends element i of arr as a CSV field; ok is false for NULL.
func appendText(b []byte, arr arrow.Array, i int) (_ []byte, ok bool) {
	if arr.IsNull(i) {
		return b, false
	}
	switch a := arr.(type) {
	case *array.String:
		return append(b, a.Value(i)...), true
	case *array.LargeString:
		return append(b, a.Value(i)...), true
	case *array.StringView:
		return append(b, a.Value(i)...), true
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10), true
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10), true
	case *array.Float32:
		return strconv.AppendFloat(b, float64(a.Value(i)), 'g', -1, 32), true
	case *array.Float64:
		return strconv.AppendFloat(b, a.Value(i), 'g', -1, 64), true
	case *array.Decimal128:
		return append(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)...), true
	case *array.Decimal256:
		return append(b, a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)...), true
	case *array.Binary:
		return append(b, blobText(a.Value(i))...), true
	case *array.LargeBinary:
		return append(b, blobText(a.Value(i))...), true
	case *array.Dictionary:
		return appendText(b, a.Dictionary(), a.GetValueIndex(i))
	case *array.Boolean, *array.Int8, *array.Int16, *array.Int32, *array.Uint8, *array.Uint16, *array.Uint32:
		return appendJSON(b, arr, i, false), true
	case *array.Date32, *array.Date64, *array.Time32, *array.Time64, *array.Timestamp,
		*array.MonthDayNanoInterval, *array.DayTimeInterval, *array.MonthInterval, *array.Duration:
		return append(b, scalarText(arr, i, false)...), true
	}
	return appendJSON(b, arr, i, false), true
}

// scalarText renders dates, times, timestamps and intervals; forJSON picks RFC 3339 (a T
// between date and time) over DuckDB's own rendering (a space). Other types fall back to
// arrow-go's rendering.
func scalarText(arr arrow.Array, i int, forJSON bool) string {
	switch a := arr.(type) {
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Date64:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return a.Value(i).ToTime(unit).Format("15:04:05.999999999")
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return a.Value(i).ToTime(unit).Format("15:04:05.999999999")
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(tt.Unit)
		sep := " "
		if forJSON {
			sep = "T"
		}
		if tt.TimeZone == "" {
			return t.Format("2006-01-02" + sep + "15:04:05.999999999")
		}
		return t.UTC().Format("2006-01-02" + sep + "15:04:05.999999999Z07:00")
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		return intervalText(v.Months, v.Days, time.Duration(v.Nanoseconds))
	case *array.DayTimeInterval:
		v := a.Value(i)
		return intervalText(0, v.Days, time.Duration(v.Milliseconds)*time.Millisecond)
	case *array.MonthInterval:
		return intervalText(int32(a.Value(i)), 0, 0)
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		return (time.Duration(a.Value(i)) * unit.Multiplier()).String()
	}
	return arr.ValueStr(i)
}

// intervalText writes an interval as "1 months 2 days 3s".
func intervalText(months, days int32, d time.Duration) string {
	var parts []string
	if months != 0 {
		parts = append(parts, fmt.Sprintf("%d months", months))
	}
	if days != 0 {
		parts = append(parts, fmt.Sprintf("%d days", days))
	}
	if d != 0 || len(parts) == 0 {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, " ")
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
