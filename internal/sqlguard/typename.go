package sqlguard

import (
	"fmt"
	"strings"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// typeNames are DuckDB's names of its scalar types, as DESCRIBE prints them.
var typeNames = map[bindings.Type]string{
	bindings.TypeBoolean: "BOOLEAN", bindings.TypeTinyInt: "TINYINT", bindings.TypeSmallInt: "SMALLINT",
	bindings.TypeInteger: "INTEGER", bindings.TypeBigInt: "BIGINT", bindings.TypeUTinyInt: "UTINYINT",
	bindings.TypeUSmallInt: "USMALLINT", bindings.TypeUInteger: "UINTEGER", bindings.TypeUBigInt: "UBIGINT",
	bindings.TypeFloat: "FLOAT", bindings.TypeDouble: "DOUBLE", bindings.TypeTimestamp: "TIMESTAMP",
	bindings.TypeDate: "DATE", bindings.TypeTime: "TIME", bindings.TypeInterval: "INTERVAL",
	bindings.TypeHugeInt: "HUGEINT", bindings.TypeUHugeInt: "UHUGEINT", bindings.TypeVarchar: "VARCHAR",
	bindings.TypeBlob: "BLOB", bindings.TypeTimestampS: "TIMESTAMP_S", bindings.TypeTimestampMS: "TIMESTAMP_MS",
	bindings.TypeTimestampNS: "TIMESTAMP_NS", bindings.TypeEnum: "ENUM", bindings.TypeUUID: "UUID",
	bindings.TypeBit: "BIT", bindings.TypeTimeTZ: "TIMETZ", bindings.TypeTimestampTZ: "TIMESTAMPTZ",
	bindings.TypeBigNum: "BIGNUM", bindings.TypeSQLNull: "NULL", bindings.TypeTimeNS: "TIME_NS",
	bindings.TypeGeometry: "GEOMETRY", bindings.TypeVariant: "VARIANT",
}

// typeName returns DuckDB's name of a logical type: DECIMAL(10,2), VARCHAR[], STRUCT(a INTEGER),
// MAP(VARCHAR, INTEGER), JSON, …
func typeName(t bindings.LogicalType) string {
	if alias := bindings.LogicalTypeGetAlias(t); alias != "" {
		return alias // JSON, and user-defined type names
	}
	id := bindings.GetTypeId(t)
	switch id {
	case bindings.TypeDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", bindings.DecimalWidth(t), bindings.DecimalScale(t))
	case bindings.TypeList:
		child := bindings.ListTypeChildType(t)
		defer bindings.DestroyLogicalType(&child)
		return typeName(child) + "[]"
	case bindings.TypeArray:
		child := bindings.ArrayTypeChildType(t)
		defer bindings.DestroyLogicalType(&child)
		return fmt.Sprintf("%s[%d]", typeName(child), bindings.ArrayTypeArraySize(t))
	case bindings.TypeMap:
		k, v := bindings.MapTypeKeyType(t), bindings.MapTypeValueType(t)
		defer bindings.DestroyLogicalType(&k)
		defer bindings.DestroyLogicalType(&v)
		return fmt.Sprintf("MAP(%s, %s)", typeName(k), typeName(v))
	case bindings.TypeStruct:
		n := bindings.StructTypeChildCount(t)
		parts := make([]string, n)
		for i := range n {
			child := bindings.StructTypeChildType(t, i)
			parts[i] = quoteField(bindings.StructTypeChildName(t, i)) + " " + typeName(child)
			bindings.DestroyLogicalType(&child)
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	case bindings.TypeUnion:
		n := bindings.UnionTypeMemberCount(t)
		parts := make([]string, n)
		for i := range n {
			child := bindings.UnionTypeMemberType(t, i)
			parts[i] = quoteField(bindings.UnionTypeMemberName(t, i)) + " " + typeName(child)
			bindings.DestroyLogicalType(&child)
		}
		return "UNION(" + strings.Join(parts, ", ") + ")"
	}
	if name, ok := typeNames[id]; ok {
		return name
	}
	return fmt.Sprintf("TYPE(%d)", id)
}

// quoteField quotes a struct field name as DuckDB prints it.
func quoteField(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
