package warehouse

import (
	"context"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

	// Which of the figures above could be read (a figure that could not is 0): DuckDB's
	// buffer manager (a query: it fails while the database is closed or detached, or when it
	// waits longer than its context allows, behind a reattach), glibc's heap, jemalloc's.
	hasDuckDB, hasMalloc, hasJemalloc bool
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
	m.hasDuckDB = w.db.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0)::UBIGINT FROM duckdb_memory()").Scan(&m.DuckDB) == nil
	m.MallocHeld, m.MallocInUse, m.MallocFree, m.hasMalloc = readMalloc()
	m.DuckDBAllocated, m.DuckDBActive, m.DuckDBResident, _, m.hasJemalloc = readJemalloc()
	m.Records, m.RecordPool = uint64(max(recordMalloc.AllocatedBytes(), 0)), uint64(recordPool.heldBytes())
	m.Folded = uint64(max(mappedBloomBytes.Load(), 0))
	m.RSS = selfRSS()
	return m
}

// MemoryPart is one figure of a Memory, by the name the ingest stats line (with _mib) and the
// ditto_analyzer_memory_bytes gauge give it.
type MemoryPart struct {
	Name  string
	Bytes uint64
}

// Parts returns the figures of m that could be read, by name: the Go runtime's (go_heap,
// go_live, go_mapped), DuckDB's buffer manager (duckdb) and allocator (duckdb_alloc,
// duckdb_active, duckdb_resident), glibc's heap (malloc_held, malloc_inuse, malloc_free), the
// events' Arrow records in it (records, record_pool), the filter of folded attempts (folded)
// and the resident set (rss, where /proc tells it). They overlap (the records are in glibc's
// heap; DuckDB's buffer manager allocates from jemalloc), so they do not add up to the RSS.
func (m Memory) Parts() []MemoryPart {
	p := []MemoryPart{{"go_heap", m.GoHeap}, {"go_live", m.GoLive}, {"go_mapped", m.GoMapped}}
	if m.hasDuckDB {
		p = append(p, MemoryPart{"duckdb", m.DuckDB})
	}
	if m.hasJemalloc {
		p = append(p, MemoryPart{"duckdb_alloc", m.DuckDBAllocated}, MemoryPart{"duckdb_active", m.DuckDBActive},
			MemoryPart{"duckdb_resident", m.DuckDBResident})
	}
	if m.hasMalloc {
		p = append(p, MemoryPart{"malloc_held", m.MallocHeld}, MemoryPart{"malloc_inuse", m.MallocInUse},
			MemoryPart{"malloc_free", m.MallocFree})
	}
	p = append(p, MemoryPart{"records", m.Records}, MemoryPart{"record_pool", m.RecordPool}, MemoryPart{"folded", m.Folded})
	if m.RSS > 0 {
		p = append(p, MemoryPart{"rss", m.RSS})
	}
	return p
}

// memoryCollector is the ditto_analyzer_memory_bytes gauge: a Warehouse's Memory, one series a
// part (label part), read when scraped. A scrape queries duckdb_memory() on a connection of the
// database (which a reattach waits for, and which waits for a reattach: at most
// memoryScrapeWait, then the part is left out of that scrape), walks glibc's arenas
// (mallinfo2, under each arena's lock) and refreshes jemalloc's statistics: what the ingest
// stats line costs, at each scrape. A part it could not read is left out rather than
// reported as 0. The parts but duckdb are the whole process's, not this Warehouse's alone.
type memoryCollector struct {
	w    *Warehouse
	desc *prometheus.Desc
}

// memoryScrapeWait bounds a scrape's query of DuckDB's memory: well under gateFirmWait, so
// that a scrape during a reattach answers without DuckDB's part instead of waiting for it.
const memoryScrapeWait = 250 * time.Millisecond

func newMemoryCollector(w *Warehouse) memoryCollector {
	return memoryCollector{w: w, desc: prometheus.NewDesc("ditto_analyzer_memory_bytes",
		"The analyzer process's memory by part, as its ingest stats line names them; the parts overlap "+
			"(see docs/http-api.md), and a part that cannot be read is left out.",
		[]string{"part"}, nil)}
}

func (c memoryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c memoryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), memoryScrapeWait)
	defer cancel()
	for _, p := range c.w.Memory(ctx).Parts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p.Bytes), p.Name)
	}
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
