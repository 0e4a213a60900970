package warehouse

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is a memory.Allocator that keeps the large buffers of released records for the
// next records instead of freeing them. Each batch's record needs a few buffers of about the
// same sizes as the last one's (the payloads' bytes, the offsets); taken fresh from malloc each
// time (calloc: the kernel's zeroed pages, faulted in one by one) they cost about as much CPU
// as appending the events to them. A buffer of at least minPooled bytes is allocated with the
// next power of two as its capacity, so that buffers of nearby sizes share a class; on Free it
// is kept, while the pool holds at most limit bytes, and handed out again zeroed (Allocate
// promises zeroed memory, as calloc does). Smaller buffers go to base directly.
type bufferPool struct {
	base  memory.Allocator
	limit int

	mu   sync.Mutex
	free [64][][]byte // by log2 of the capacity; each buffer at full length
	held int          // bytes in free
}

// minPooled is the smallest buffer the pool keeps: a batch's columns of a few thousand rows.
const minPooled = 64 << 10

func newBufferPool(base memory.Allocator, limit int) *bufferPool {
	return &bufferPool{base: base, limit: limit}
}

// Allocate implements memory.Allocator.
func (p *bufferPool) Allocate(size int) []byte {
	if size < minPooled {
		return p.base.Allocate(size)
	}
	class := bits.Len(uint(size - 1)) // 1<<class >= size
	p.mu.Lock()
	if l := p.free[class]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[class] = l[:len(l)-1]
		p.held -= len(b)
		p.mu.Unlock()
		clear(b)
		return b[:size]
	}
	p.mu.Unlock()
	return p.base.Allocate(1 << class)[:size]
}

// Reallocate implements memory.Allocator.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		// The bytes past len(b) are zero: Allocate cleared the whole capacity.
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free implements memory.Allocator.
func (p *bufferPool) Free(b []byte) {
	c := cap(b)
	if c < minPooled {
		// At the length it was allocated at: a buffer shrunk in place (Reallocate) and freed
		// at its shorter length would leave the difference counted by the base (the
		// mallocator counts what Free is given), as if it were never freed.
		p.base.Free(b[:c])
		return
	}
	b = b[:c]
	p.mu.Lock()
	if p.held+c <= p.limit {
		class := bits.Len(uint(c - 1))
		p.free[class] = append(p.free[class], b)
		p.held += c
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.base.Free(b)
}

// heldBytes returns the bytes of the released buffers the pool keeps.
func (p *bufferPool) heldBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// drain frees every buffer the pool keeps.
func (p *bufferPool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for class, l := range p.free {
		for _, b := range l {
			p.base.Free(b)
		}
		p.free[class] = nil
	}
	p.held = 0
}
