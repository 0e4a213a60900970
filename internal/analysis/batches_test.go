package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBatchCols: a record batch's columns read as row reads a row's values (NULL as the zero
// value, whatever the buffer holds there), and a column out of place or of a type the reader
// does not take is an error naming the statement and the column.
func TestBatchCols(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer bld.Release()
	bld.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "hidden"}, []bool{true, false})
	bld.Field(1).(*array.Int32Builder).AppendValues([]int32{7, 9}, []bool{true, false})
	bld.Field(2).(*array.BooleanBuilder).AppendValues([]bool{true, true}, []bool{true, false})
	bld.Field(3).(*array.Float64Builder).AppendValues([]float64{1.5, 2.5}, []bool{true, false})
	lb := bld.Field(4).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	lb.AppendNull()
	bld.Field(5).(*array.Int64Builder).AppendValues([]int64{1 << 62, 3}, []bool{true, false})
	rec := bld.NewRecordBatch()
	defer rec.Release()

	b := batchCols{stmt: "stmt", cols: []string{"s", "n", "b", "f", "l", "k"}, rec: rec}
	s, n, bo, f, l, k := b.str(0), b.int(1), b.bool(2), b.float(3), b.strings(4), b.int(5)
	if b.err != nil {
		t.Fatal(b.err)
	}
	if s(0) != "x" || n(0) != 7 || !bo(0) || f(0) != 1.5 || !slices.Equal(l(0), []string{"a", "b"}) || k(0) != 1<<62 {
		t.Errorf("row 0 = %q %d %v %v %q %d, want x 7 true 1.5 [a b] 2^62", s(0), n(0), bo(0), f(0), l(0), k(0))
	}
	if s(1) != "" || n(1) != 0 || bo(1) || f(1) != 0 || l(1) == nil || len(l(1)) != 0 || k(1) != 0 {
		t.Errorf("row 1 (NULLs) = %q %d %v %v %#v %d, want the zero values and an empty list", s(1), n(1), bo(1), f(1), l(1), k(1))
	}
	if b.strings(0); b.err == nil || !strings.Contains(b.err.Error(), "column s: unexpected Arrow type utf8") {
		t.Errorf("a list read from a string column: %v", b.err)
	}

	b = batchCols{stmt: "stmt", cols: []string{"s", "m"}, rec: rec}
	if b.int(1); b.err == nil || !strings.Contains(b.err.Error(), "stmt: column 1 is not m") {
		t.Errorf("a column out of place: %v", b.err)
	}
	b = batchCols{stmt: "stmt", cols: []string{"s", "n", "b", "f", "l", "k"}, rec: rec}
	if b.str(3); b.err == nil || !strings.Contains(b.err.Error(), "column f: unexpected Arrow type float64") {
		t.Errorf("a string read from a float column: %v", b.err)
	}
}
