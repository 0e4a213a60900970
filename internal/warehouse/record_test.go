package warehouse

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// countingAllocator is a checked allocator that also counts its allocations.
type countingAllocator struct {
	*memory.CheckedAllocator
	n atomic.Int64
}

func (a *countingAllocator) Allocate(size int) []byte {
	a.n.Add(1)
	return a.CheckedAllocator.Allocate(size)
}

// The events' Arrow records are in C memory, which only their release frees: after ingestion
// (good events and a rejected message, in many batches) every buffer of
// every record is released.
func TestRecordsAreReleased(t *testing.T) {
	alloc := &countingAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer func(a memory.Allocator) { recordAllocator = a }(recordAllocator)
	recordAllocator = alloc

	b := bustest.NewServer(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	lines := sampleLines(t)
	for i, sm := range lines {
		if err := p.Publish(ctx, sm.subject, sm.id, sm.line); err != nil {
			t.Fatal(err)
		}
		if i == len(lines)/2 {
			if err := p.Publish(ctx, sm.subject, "not-an-event", []byte("{not json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CatchUp(ctx, b, IngestConfig{BatchSize: 16, BatchWait: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Events; got != uint64(len(lines)) {
		t.Fatalf("stored %d events, want %d", got, len(lines))
	}
	if alloc.n.Load() == 0 {
		t.Fatal("no record was allocated with recordAllocator")
	}
	if n := alloc.CurrentAlloc(); n != 0 {
		t.Errorf("%d bytes of Arrow records not released after ingestion", n)
	}
}
