package warehouse

import (
	"maps"
	"testing"
)

// Parts names each figure as the ingest stats line and ditto_analyzer_memory_bytes do (the
// load's judge reads rss_mib and the trail the others), with its own value, and leaves out
// the figures that could not be read.
func TestMemoryParts(t *testing.T) {
	m := Memory{GoHeap: 1, GoLive: 2, GoMapped: 3, DuckDB: 4, MallocHeld: 5, MallocInUse: 6, MallocFree: 7,
		DuckDBAllocated: 8, DuckDBActive: 9, DuckDBResident: 10, Records: 11, RecordPool: 12, Folded: 13, RSS: 14,
		hasDuckDB: true, hasMalloc: true, hasJemalloc: true}
	all := map[string]uint64{"go_heap": 1, "go_live": 2, "go_mapped": 3, "duckdb": 4, "malloc_held": 5,
		"malloc_inuse": 6, "malloc_free": 7, "duckdb_alloc": 8, "duckdb_active": 9, "duckdb_resident": 10,
		"records": 11, "record_pool": 12, "folded": 13, "rss": 14}
	of := func(m Memory) map[string]uint64 {
		got := map[string]uint64{}
		for _, p := range m.Parts() {
			if _, dup := got[p.Name]; dup {
				t.Errorf("part %q twice", p.Name)
			}
			got[p.Name] = p.Bytes
		}
		return got
	}
	if got := of(m); !maps.Equal(got, all) {
		t.Errorf("Parts() = %v, want %v", got, all)
	}
	// Nothing read but the Go runtime's, the records', the filter's: a platform without glibc,
	// jemalloc or /proc, and a database that did not answer.
	m.hasDuckDB, m.hasMalloc, m.hasJemalloc, m.RSS = false, false, false, 0
	want := map[string]uint64{"go_heap": 1, "go_live": 2, "go_mapped": 3, "records": 11, "record_pool": 12, "folded": 13}
	if got := of(m); !maps.Equal(got, want) {
		t.Errorf("Parts() with nothing else read = %v, want %v", got, want)
	}
	// A figure read as 0 is a part of 0, not left out.
	m.hasDuckDB, m.DuckDB = true, 0
	if got := of(m); got["duckdb"] != 0 || len(got) != len(want)+1 {
		t.Errorf("Parts() with DuckDB read as 0 = %v, want duckdb 0 among them", got)
	}
}
