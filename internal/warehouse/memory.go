package warehouse

import (
	"context"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Memory is where the analyzer process's memory is, as far as it can tell.
type Memory struct {
	GoHeap uint64 // bytes of heap objects, live and not yet collected (runtime/metrics)
	// GoLive is the heap the last garbage collection found live (runtime/metrics'
	// /gc/heap/live:bytes), as of that collection: unlike GoHeap it counts no garbage, which
	// rises and falls with the collector's pacing (nor anything allocated since). A growing
	// GoLive is memory something holds.
	GoLive uint64
	// GoMapped is the memory the Go runtime holds from the OS and has not returned: heap
	// objects, free heap spans not yet scavenged, stacks, runtime metadata.
	GoMapped uint64
	DuckDB   uint64 // DuckDB's buffer manager: sum of duckdb_memory().memory_usage_bytes
	// The C heap as glibc accounts for it (0 where the C library is not glibc 2.33 or later):
	// the events' Arrow records and C code other than DuckDB's allocator (below), DuckDB's
	// C++ objects among it. MallocHeld is the memory its arenas and mappings span, MallocInUse
	// what is allocated, MallocFree what is free in the arenas; free pages returned to the OS
	// inside an arena (malloc_trim) still count as held, so held is not what is resident.
	MallocHeld, MallocInUse, MallocFree uint64
	// DuckDB's allocator, jemalloc, in DuckDB's Linux builds (0 elsewhere): bytes allocated
	// (the buffer manager's and the rest); active, the pages that hold allocations (active −
	// allocated is fragmentation: pages kept by a few live objects); resident, what counts in
	// the RSS (active, jemalloc's metadata, and freed pages not yet returned to the OS: a
	// purge returns those, resident − active).
	DuckDBAllocated, DuckDBActive, DuckDBResident uint64
	// The events' Arrow records' C memory (part of glibc's heap): all of it (records being
	// built and committed, and the pool's), and the pool's, released buffers kept for the next
	// records.
	Records, RecordPool uint64
	// Folded is the filter of folded attempts' levels mapped outside the Go heap (bloomWords):
	// part of the RSS, in none of the figures above.
	Folded uint64
	RSS    uint64 // the process's resident set (Linux /proc/self/status VmRSS), 0 elsewhere
}

// Memory reads the process's memory figures. A figure it cannot read is 0.
func (w *Warehouse) Memory(ctx context.Context) Memory {
	var m Memory
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	u := func(i int) uint64 {
		if sample[i].Value.Kind() == metrics.KindUint64 {
			return sample[i].Value.Uint64()
		}
		return 0
	}
	m.GoHeap, m.GoLive = u(0), u(3)
	if total, released := u(1), u(2); total > released {
		m.GoMapped = total - released
	}
	_ = w.db.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0)::UBIGINT FROM duckdb_memory()").Scan(&m.DuckDB)
	m.MallocHeld, m.MallocInUse, m.MallocFree, _ = readMalloc()
	m.DuckDBAllocated, m.DuckDBActive, m.DuckDBResident, _, _ = readJemalloc()
	m.Records, m.RecordPool = uint64(max(recordMalloc.AllocatedBytes(), 0)), uint64(recordPool.heldBytes())
	m.Folded = uint64(max(mappedBloomBytes.Load(), 0))
	m.RSS = selfRSS()
	return m
}

// selfRSS returns VmRSS of this process in bytes, or 0.
func selfRSS() uint64 { return procStatus("VmRSS:") }

// procStatus returns a kB field of /proc/self/status (VmRSS:, VmHWM:, …) in bytes, or 0.
func procStatus(field string) uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
