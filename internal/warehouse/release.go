package warehouse

import (
	"os"
	"sync/atomic"
)

// keepFreed leaves the allocators' free memory with them after checkpoints, as before
// releaseAfterCheckpoint: set by tests only (TestMemorySteadyIngest's DITTO_MEM_KEEP_FREED), to
// measure without the release.
var keepFreed bool

// releases counts the checkpoints after which releaseAfterCheckpoint released free memory.
var releases atomic.Int64

// releaseAfterCheckpoint returns the allocators' free memory to the OS when the COMMIT just
// made checkpointed the database, which it tells by the WAL: a checkpoint writes the WAL's
// contents into the file and empties it, so the WAL is smaller than after the last commit.
//
// A checkpoint takes the most memory ingestion ever takes at once: DuckDB compresses the rows
// appended since the last one and merges small row groups, partly outside its buffer manager's
// account, and then frees all of it and the appended rows' in-memory blocks. Left to the
// allocators, those pages stay in the process: DuckDB's jemalloc returns freed pages over its
// decay time (5 s) and flushes them at once only when a worker thread goes idle (ingestion
// runs DuckDB on one thread, the caller's), and glibc keeps the free space inside its arenas
// (DuckDB's C++ objects, the events' Arrow records) for good. Released, the memory between two
// checkpoints is what is in use, and the next checkpoint's peak does not pile on the last
// one's leftovers. Once a checkpoint, so its cost (a purge, a trim, and the page faults of the
// memory used again) is a few milliseconds against the checkpoint's seconds.
func (ing *ingester) releaseAfterCheckpoint() {
	path := ing.w.cfg.Path
	if path == "" || keepFreed {
		return
	}
	var size int64
	if fi, err := os.Stat(path + ".wal"); err == nil {
		size = fi.Size()
	}
	// Every commit writes to the WAL (at least the watermark), so a WAL no larger than after the
	// last commit was checkpointed, even when that one checkpointed too (a transaction of
	// several batches can pass the threshold each time; "smaller" missed those).
	if size <= ing.walSize {
		releaseFreeMemory()
		releases.Add(1)
	}
	ing.walSize = size
}
