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
	DuckDB uint64 // DuckDB's buffer manager: sum of duckdb_memory().memory_usage_bytes
	RSS    uint64 // the process's resident set (Linux /proc/self/status VmRSS), 0 elsewhere
}

// Memory reads the process's memory figures. A figure it cannot read is 0.
func (w *Warehouse) Memory(ctx context.Context) Memory {
	var m Memory
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		m.GoHeap = sample[0].Value.Uint64()
	}
	_ = w.db.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0)::UBIGINT FROM duckdb_memory()").Scan(&m.DuckDB)
	m.RSS = selfRSS()
	return m
}

// selfRSS returns VmRSS of this process in bytes, or 0.
func selfRSS() uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
