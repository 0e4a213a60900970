package queryapi

import (
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// Arrow records are built here from the driver's Go values rather than through the driver's
// Arrow interface, which needs the duckdb_arrow build tag for every build of the analyzer.
// Scalars keep their Arrow type; nested values (lists, structs, maps, unions, JSON) travel as
// their JSON text in a string column. Every field carries its DuckDB type in the metadata
// key "duckdb.type".

// MetaDuckDBType is the field metadata key holding a column's DuckDB type.
const MetaDuckDBType = "duckdb.type"

// arrowBatchRows is the number of rows per record batch.
const arrowBatchRows = 64 * 1024

// arrowType maps a DuckDB type name to the Arrow type its column is written as.
func arrowType(dbType string) arrow.DataType {
	if nested(dbType) {
		return arrow.BinaryTypes.String
	}
	switch baseType(dbType) {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean
	case "TINYINT":
		return arrow.PrimitiveTypes.Int8
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16
	case "INTEGER":
		return arrow.PrimitiveTypes.Int32
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64
	case "UTINYINT":
		return arrow.PrimitiveTypes.Uint8
	case "USMALLINT":
		return arrow.PrimitiveTypes.Uint16
	case "UINTEGER":
		return arrow.PrimitiveTypes.Uint32
	case "UBIGINT":
		return arrow.PrimitiveTypes.Uint64
	case "FLOAT":
		return arrow.PrimitiveTypes.Float32
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64
	case "HUGEINT", "UHUGEINT":
		return &arrow.Decimal128Type{Precision: 38, Scale: 0}
	case "DECIMAL":
		p, s := decimalParams(dbType)
		return &arrow.Decimal128Type{Precision: p, Scale: s}
	case "BLOB":
		return arrow.BinaryTypes.Binary
	case "DATE":
		return arrow.FixedWidthTypes.Date32
	case "TIME":
		return arrow.FixedWidthTypes.Time64us
	case "TIMESTAMP":
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case "TIMESTAMP_S":
		return &arrow.TimestampType{Unit: arrow.Second}
	case "TIMESTAMP_MS":
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case "TIMESTAMP_NS":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case "TIMESTAMPTZ":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case "INTERVAL":
		return arrow.FixedWidthTypes.MonthDayNanoInterval
	}
	// VARCHAR, ENUM, UUID, TIMETZ, BIT and anything newer: text.
	return arrow.BinaryTypes.String
}

// decimalParams reads DECIMAL(p,s); DuckDB's default is (18,3).
func decimalParams(dbType string) (int32, int32) {
	inner := strings.TrimSuffix(strings.TrimPrefix(dbType, "DECIMAL("), ")")
	ps, ss, ok := strings.Cut(inner, ",")
	p, err1 := strconv.Atoi(strings.TrimSpace(ps))
	s, err2 := strconv.Atoi(strings.TrimSpace(ss))
	if !ok || err1 != nil || err2 != nil {
		return 18, 3
	}
	return int32(p), int32(s)
}

// ArrowSchema returns the Arrow schema of a result's columns.
func ArrowSchema(cols []sqlguard.Column) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{
			Name:     c.Name,
			Type:     arrowType(c.Type),
			Nullable: true,
			Metadata: arrow.NewMetadata([]string{MetaDuckDBType}, []string{c.Type}),
		}
	}
	return arrow.NewSchema(fields, nil)
}

// WriteArrow writes res as an Arrow IPC stream: the schema, then record batches of up to
// 64Ki rows (one empty batch for an empty result, so readers see the schema in use).
func WriteArrow(w io.Writer, res *sqlguard.Result) error {
	schema := ArrowSchema(res.Columns)
	mem := memory.NewGoAllocator()
	wr := ipc.NewWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()

	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return wr.Write(rec)
	}
	for i, row := range res.Rows {
		for j, v := range row {
			if err := appendValue(b.Field(j), v, res.Columns[j].Type); err != nil {
				return fmt.Errorf("api: arrow: row %d column %q: %w", i, res.Columns[j].Name, err)
			}
		}
		if (i+1)%arrowBatchRows == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(res.Rows) == 0 || len(res.Rows)%arrowBatchRows != 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return wr.Close()
}

// appendValue appends one driver value to a builder made by arrowType for dbType.
func appendValue(b array.Builder, v any, dbType string) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.StringBuilder:
		s, _ := textValue(v, dbType)
		bb.Append(s)
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Int8Builder:
		x, ok := v.(int8)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Int16Builder:
		x, ok := v.(int16)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Uint8Builder:
		x, ok := v.(uint8)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Uint16Builder:
		x, ok := v.(uint16)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Uint32Builder:
		x, ok := v.(uint32)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Uint64Builder:
		x, ok := v.(uint64)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Decimal128Builder:
		var n *big.Int
		switch x := v.(type) {
		case duckdb.Decimal:
			n = x.Value
		case *big.Int:
			n = x
		default:
			return typeErr(v, dbType)
		}
		bb.Append(decimal128.FromBigInt(n))
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(x)
	case *array.Date32Builder:
		x, ok := v.(time.Time)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(arrow.Date32FromTime(x))
	case *array.Time64Builder:
		x, ok := v.(time.Time)
		if !ok {
			return typeErr(v, dbType)
		}
		d := time.Duration(x.Hour())*time.Hour + time.Duration(x.Minute())*time.Minute +
			time.Duration(x.Second())*time.Second + time.Duration(x.Nanosecond())
		bb.Append(arrow.Time64(d.Microseconds()))
	case *array.TimestampBuilder:
		x, ok := v.(time.Time)
		if !ok {
			return typeErr(v, dbType)
		}
		unit := bb.Type().(*arrow.TimestampType).Unit
		ts, err := arrow.TimestampFromTime(x, unit)
		if err != nil {
			return err
		}
		bb.Append(ts)
	case *array.MonthDayNanoIntervalBuilder:
		x, ok := v.(duckdb.Interval)
		if !ok {
			return typeErr(v, dbType)
		}
		bb.Append(arrow.MonthDayNanoInterval{Months: x.Months, Days: x.Days, Nanoseconds: x.Micros * 1000})
	default:
		return fmt.Errorf("no Arrow builder for %s", dbType)
	}
	return nil
}

func typeErr(v any, dbType string) error {
	return fmt.Errorf("value %T for DuckDB type %s", v, dbType)
}
