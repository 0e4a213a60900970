package warehouse

import (
	"runtime"
	"sync/atomic"
)

// bloomWords are a Bloom level's bits, kept outside the Go heap where the OS maps memory for
// them. The levels of the filter of folded attempts live as long as the ingester and grow with
// the attempts stored (9.9 MiB from about 2^21 runs, 208 MiB from about 2^25); in the Go heap,
// where the collector lets the heap grow to twice what is live before it collects (the default
// GOGC), each of their bytes raised the heap's peaks, and the RSS, by about two (a 30-minute
// load's filter grew 7.9 MiB: docs/benchmarks.md, thirty-sixth session). Mapped, they count
// once. The mapping is returned to the OS when the level is dropped (a cleanup, after the
// collector finds its bloomWords unreachable).
type bloomWords struct {
	w []uint64
}

// mappedBloomBytes is the bytes of levels mapped outside the Go heap and not yet returned
// (Memory.Folded).
var mappedBloomBytes atomic.Int64

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
		unmapWords(w)
		mappedBloomBytes.Add(-int64(len(w)) * 8)
	}, w)
	return bw
}
