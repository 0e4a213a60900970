package warehouse

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
)

// recordAllocator allocates the buffers of the events' Arrow records in C memory (malloc): a
// record lives from its batch's decoding to its commit and is released explicitly, so the Go
// heap need not hold and collect about a batch's bytes again per batch, and DuckDB scans C
// memory through the C data interface (what the mallocator is for). The pool keeps released
// records' buffers for the next ones, up to recordPoolBytes.
var recordAllocator memory.Allocator = recordPool

// recordPool is recordAllocator's pool, and recordMalloc its C allocator, which counts the
// bytes it has allocated and not freed (Warehouse.Memory reads both).
var (
	recordMalloc = &countedMalloc{Mallocator: mallocator.NewMallocator()}
	recordPool   = newBufferPool(recordMalloc, recordPoolBytes)
)

// countedMalloc is a mallocator whose count of bytes allocated and not freed another goroutine
// may read. The mallocator's own count (AllocatedBytes) is written atomically and read plainly:
// Warehouse.Memory reading it while a batch's record was built was a data race (go test -race).
type countedMalloc struct {
	*mallocator.Mallocator
	n atomic.Int64
}

func (c *countedMalloc) Allocate(size int) []byte {
	c.n.Add(int64(size))
	return c.Mallocator.Allocate(size)
}

func (c *countedMalloc) Reallocate(size int, b []byte) []byte {
	c.n.Add(int64(size - len(b)))
	return c.Mallocator.Reallocate(size, b)
}

// Free frees b and counts it freed. The mallocator ignores a free of memory it does not hold
// (a double free) without saying so, and this count would then fall below its own; the only
// caller, bufferPool, frees each buffer it allocated once.
func (c *countedMalloc) Free(b []byte) {
	c.n.Add(-int64(len(b)))
	c.Mallocator.Free(b)
}

// AllocatedBytes is the bytes allocated and not freed.
func (c *countedMalloc) AllocatedBytes() int64 { return c.n.Load() }

// recordPoolBytes bounds the released buffers kept for the next records. Each batch's record
// is released once stored (a batch of 10,240 events of a few hundred bytes needs some 4 MiB of
// buffers), and a transaction's failure rebuilds none: this keeps those of many batches.
const recordPoolBytes = 64 << 20

// eventsSchema is the Arrow schema of a batch of events: the columns of table events, in order.
var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "stream_seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "type", Type: arrow.BinaryTypes.String},
	{Name: "schema_version", Type: arrow.PrimitiveTypes.Int32},
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "study", Type: arrow.BinaryTypes.String},
	{Name: "run", Type: arrow.BinaryTypes.String},
	{Name: "attempt", Type: arrow.PrimitiveTypes.Int32},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "source_kind", Type: arrow.BinaryTypes.String},
	{Name: "source_id", Type: arrow.BinaryTypes.String},
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "span_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ignorable", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "payload", Type: arrow.BinaryTypes.String},
}, nil)

// payloadColumn is the index of the payload in eventsSchema.
const payloadColumn = 14

// buildRecord converts the good items to one Arrow record batch. The caller releases it.
func buildRecord(mem memory.Allocator, items []*item) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, eventsSchema)
	defer b.Release()
	b.Reserve(len(items))
	streamSeq := b.Field(0).(*array.Int64Builder)
	id := b.Field(1).(*array.StringBuilder)
	typ := b.Field(2).(*array.StringBuilder)
	schema := b.Field(3).(*array.Int32Builder)
	ts := b.Field(4).(*array.TimestampBuilder)
	study := b.Field(5).(*array.StringBuilder)
	run := b.Field(6).(*array.StringBuilder)
	attempt := b.Field(7).(*array.Int32Builder)
	seq := b.Field(8).(*array.Int64Builder)
	srcKind := b.Field(9).(*array.StringBuilder)
	srcID := b.Field(10).(*array.StringBuilder)
	traceID := b.Field(11).(*array.StringBuilder)
	spanID := b.Field(12).(*array.StringBuilder)
	ignorable := b.Field(13).(*array.BooleanBuilder)
	payload := b.Field(payloadColumn).(*array.StringBuilder)
	reserveData(items, id, typ, study, run, srcKind, srcID, traceID, spanID, payload)
	for _, it := range items {
		e := &it.env
		streamSeq.Append(int64(it.streamSeq))
		id.Append(e.ID)
		typ.Append(string(e.Type))
		schema.Append(int32(e.Schema))
		ts.Append(arrow.Timestamp(e.Time.UnixMicro()))
		study.Append(e.Study)
		run.Append(e.Run)
		attempt.Append(int32(e.Attempt))
		seq.Append(e.Seq)
		srcKind.Append(string(e.Source.Kind))
		srcID.Append(e.Source.ID)
		appendNullable(traceID, e.TraceID)
		appendNullable(spanID, e.SpanID)
		ignorable.Append(e.Ignorable)
		payload.BinaryBuilder.Append(it.payload)
	}
	return b.NewRecordBatch()
}

func appendNullable(b *array.StringBuilder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.Append(s)
}

// reserveData sizes each string column's data for the items' bytes at once: grown by
// doubling, the columns' buffers were allocated (in C), copied and zeroed about twice over,
// a third of the record's CPU.
func reserveData(items []*item, id, typ, study, run, srcKind, srcID, traceID, spanID, payload *array.StringBuilder) {
	var n [9]int
	for _, it := range items {
		e := &it.env
		n[0] += len(e.ID)
		n[1] += len(e.Type)
		n[2] += len(e.Study)
		n[3] += len(e.Run)
		n[4] += len(e.Source.Kind)
		n[5] += len(e.Source.ID)
		n[6] += len(e.TraceID)
		n[7] += len(e.SpanID)
		n[8] += len(it.payload)
	}
	for i, b := range []*array.StringBuilder{id, typ, study, run, srcKind, srcID, traceID, spanID, payload} {
		b.ReserveData(n[i])
	}
}
