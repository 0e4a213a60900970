package warehouse

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"
)

// The pool hands a kept buffer out again zeroed, grows a buffer keeping its bytes, keeps no
// more than its limit, and frees through its base allocator everything it does not keep.
func TestBufferPool(t *testing.T) {
	base := memory.NewCheckedAllocator(memory.NewGoAllocator())
	p := newBufferPool(base, 3*minPooled)

	a := p.Allocate(minPooled + 1)
	if len(a) != minPooled+1 || cap(a) != 2*minPooled {
		t.Fatalf("len %d cap %d, want %d and %d", len(a), cap(a), minPooled+1, 2*minPooled)
	}
	for i := range a {
		a[i] = 0xAB
	}
	p.Free(a)
	b := p.Allocate(2 * minPooled)
	if &b[0] != &a[0] {
		t.Fatal("the kept buffer was not reused")
	}
	if i := bytes.IndexFunc(b[:cap(b)], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("a reused buffer is not zeroed: byte %d", i)
	}

	copy(b, "kept")
	b = p.Reallocate(3*minPooled, b)
	if len(b) != 3*minPooled || string(b[:4]) != "kept" {
		t.Fatalf("Reallocate: len %d, first bytes %q", len(b), b[:4])
	}
	if i := bytes.IndexFunc(b[4:], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("Reallocate: byte %d of the new part is not zero", 4+i)
	}

	small := p.Allocate(100)
	p.Free(small) // not kept: freed at once
	c := p.Allocate(2 * minPooled)
	p.Free(b) // 4*minPooled: over the limit, freed
	p.Free(c) // kept
	if p.held != 2*minPooled {
		t.Fatalf("the pool holds %d bytes, want %d", p.held, 2*minPooled)
	}
	p.drain()
	if n := base.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes still allocated after the pool was drained", n)
	}
}

// A small buffer (not pooled) shrunk in place and freed leaves the base allocator's count where
// it was: the fold records' many small buffers, shrunk by their builders, once made the
// mallocator's count of the records' bytes grow without end (80 MiB over a 15-minute load run)
// while the memory itself was freed.
func TestBufferPoolSmallShrunkFreedCounts(t *testing.T) {
	base := mallocator.NewMallocator()
	p := newBufferPool(base, 3*minPooled)
	b := p.Allocate(1000)
	b = p.Reallocate(10, b)
	p.Free(b)
	big := p.Allocate(minPooled + 1)
	big = p.Reallocate(100, big)
	p.Free(big)
	p.drain()
	if n := base.AllocatedBytes(); n != 0 {
		t.Fatalf("the base counts %d bytes after everything was freed, want 0", n)
	}
}
