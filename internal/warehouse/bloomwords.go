package warehouse

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// bloomWords are a Bloom level's bits, kept outside the Go heap where the OS maps memory for
// them. The levels of the filter of folded attempts live as long as the ingester and grow with
// the attempts stored (9.9 MiB from about 2^21 runs, 208 MiB from about 2^25); in the Go heap,
// where the collector lets the heap grow to twice what is live before it collects (the default
// GOGC), each of their bytes raised the heap's peaks, and the RSS, by about two (a 30-minute
// load's filter grew 7.9 MiB: docs/benchmarks.md, thirty-sixth session). Mapped, they count
// once (reasoning about the default GOGC, with a GOMEMLIMIT that does not bind: the analyzer's
// Go heap is far under the load's 256 MiB). Mapped bytes are outside GOMEMLIMIT's accounting.
// The mapping is returned to the OS some time after the level is dropped (a cleanup, run after
// the collector finds its bloomWords unreachable); levels are dropped only when the filter is
// loaded again or the ingester goes away.
type bloomWords struct {
	w []uint64
}

// mappedBloomBytes is the bytes of levels mapped outside the Go heap and not yet returned
// (Memory.Folded).
var mappedBloomBytes atomic.Int64

// bloomUnmapped, when set (by tests), is told the address of each level's words as they are
// returned to the OS.
var bloomUnmapped atomic.Pointer[func(addr uintptr)]

// newBloomWords returns n zeroed words, mapped outside the Go heap if the OS will, in it
// otherwise.
func newBloomWords(n int) *bloomWords {
	w, ok := mapWords(n)
	if !ok {
		return &bloomWords{w: make([]uint64, n)}
	}
	bw := &bloomWords{w: w}
	mappedBloomBytes.Add(int64(n) * 8)
	runtime.AddCleanup(bw, func(w []uint64) {
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(w)))
		unmapWords(w)
		mappedBloomBytes.Add(-int64(len(w)) * 8)
		if f := bloomUnmapped.Load(); f != nil {
			(*f)(addr)
		}
	}, w)
	return bw
}
