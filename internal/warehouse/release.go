package warehouse

import (
	"os"
	"sync/atomic"
	"time"
)

// keepFreed leaves the allocators' free memory with them after commits, as before
// releaseAfterCommit: set by tests only (TestMemorySteadyIngest's DITTO_MEM_KEEP_FREED), to
// measure without the release.
var keepFreed bool

// releases counts the commits after which releaseAfterCommit released free memory;
// checkpointReleases those of them that had checkpointed the database.
var releases, checkpointReleases atomic.Int64

// releaseEvery is the shortest time between two releases after commits that did not
// checkpoint, counted from the first commit (a variable for TestReleaseAfterEveryCommit). It
// was 1 s, and the first commit released, until the thirtieth session: a release after nearly
// every commit, whose part for jemalloc's pages its background thread (turned on after it)
// mostly does now. In one 5-minute run each of the 20,000 events/s load, with releases after
// checkpoints only, jemalloc's freed pages not yet returned were 12.05 MiB at the median
// sample against 12.35 with one every second (90th percentile 30.7 against 19.6), the peak RSS
// 514.7 MiB against 514.6, the analyzer's CPU 22.0 µs an event against 23.4; in
// BenchmarkIngest its CPU over the reference's was 2.62 against 2.74 (medians of 5 alternated
// rounds), a pass faulting 21,200 pages instead of 26,600 (docs/benchmarks.md). 30 s keeps a
// release between checkpoints (and glibc's trim, which has no background thread) for an
// analyzer whose commits rarely checkpoint. One 5-minute run of the same load at 30 s held, at
// 21.7 µs an event, a peak RSS of 504.9 MiB and freed pages of 11.15 MiB at the median (90th
// percentile 33.6); docs/benchmarks.md, thirtieth session.
var releaseEvery = 30 * time.Second

// releaseAfterCommit returns the allocators' free memory to the OS after a COMMIT: always when
// the commit checkpointed the database, which it tells by the WAL (a checkpoint writes the
// WAL's contents into the file and empties it, so the WAL is no larger than after the last
// commit), and otherwise when the last release (or the ingester's first commit) is at least
// releaseEvery old. The time is kept per ingester: each warehouse ingesting in one process
// releases on its own.
//
// A checkpoint takes the most memory ingestion ever takes at once: DuckDB compresses the rows
// appended since the last one (and merged small row groups, rewriting them, until Open turned
// that off), partly outside its buffer manager's account, and then frees all of it and the
// appended rows' in-memory blocks. A transaction frees less but does so every few seconds:
// the decoded events' Arrow records and what DuckDB allocated to append, sort and fold them.
// Left to the allocators, those pages stay in the process: DuckDB's jemalloc returns freed
// pages over its decay time, and only for an arena a thread allocates in again or through its
// background thread (Open turns that on), and glibc keeps the free space inside its arenas for
// good. Under the 20,000 events/s load with a release after checkpoints only, jemalloc's
// resident pages beyond its active ones (freed, not yet returned) were 16–136 MiB from one
// sample to the next, and they made the analyzer's RSS peaks (deploy/README.md); the background
// thread now returns most of them within a second or so. Released, what stays resident is what
// is in use. Its cost is the purge and the trim (27.5 ms at the median under load, with the
// background thread on; deploy/README.md) and the page faults of the memory used again:
// releaseEvery bounds it.
func (ing *ingester) releaseAfterCommit(checkpointed bool) {
	if ing.w.cfg.Path == "" || keepFreed {
		return
	}
	now := time.Now()
	if ing.releasedAt.IsZero() {
		ing.releasedAt = now // the first commit: releaseEvery from now
	}
	if !checkpointed && now.Sub(ing.releasedAt) < releaseEvery {
		return
	}
	releaseFreeMemory()
	ing.releasedAt = now
	releases.Add(1)
	if checkpointed {
		checkpointReleases.Add(1)
	}
}

// sawCheckpoint reports whether the commit just made checkpointed the database, which it tells
// by the WAL: every commit writes to the WAL (at least the watermark), so a WAL no larger than
// after the last commit was checkpointed, even when that one checkpointed too (a transaction of
// several batches can pass the threshold each time; "smaller" missed those). An in-memory
// database has no WAL: false.
func (ing *ingester) sawCheckpoint() bool {
	path := ing.w.cfg.Path
	if path == "" {
		return false
	}
	var size int64
	if fi, err := os.Stat(path + ".wal"); err == nil {
		size = fi.Size()
	}
	checkpointed := size <= ing.walSize
	ing.walSize = size
	return checkpointed
}
