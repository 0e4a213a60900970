//go:build !linux || !cgo

package warehouse

// readMalloc reports nothing where the C library's heap cannot be read.
func readMalloc() (held, inUse, free uint64, ok bool) { return 0, 0, 0, false }

// readJemalloc reports nothing where DuckDB's allocator cannot be read.
func readJemalloc() (allocated, active, resident, retained uint64, ok bool) { return 0, 0, 0, 0, false }

// releaseFreeMemory does nothing where neither allocator can be asked.
func releaseFreeMemory() {}
