package warehouse_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/prometheus/client_golang/prometheus"
)

// memSample is the memory of this process after a chunk of steady ingestion, measured after a
// GC (and, for RSS, after the Go runtime returned its free pages to the OS).
type memSample struct {
	events     int
	heap       uint64 // Go heap: live objects after GC (HeapAlloc)
	goMapped   uint64 // memory the Go runtime holds from the OS (Sys - HeapReleased)
	rss        uint64 // VmRSS after debug.FreeOSMemory: Go's memory + DuckDB's C memory + code
	peakRSS    uint64 // VmHWM so far: what the load test reports
	peakHeap   uint64 // the largest HeapInuse sampled every 20ms so far (garbage included)
	duckdb     uint64 // sum of duckdb_memory().memory_usage_bytes (DuckDB's buffer manager)
	openRuns   int
	openEvents int
	cHeld      uint64 // glibc's C heap held from the OS (DuckDB, Arrow records), after the chunk
	cInUse     uint64 // of which allocated
	top        rssPeak
}

// rssPeak is the sample with the largest RSS between two chunks' ends (sampled every 100ms)
// and where that memory was then.
type rssPeak struct {
	rss, goMapped, duckdb, cHeld, cInUse, jeAllocated, jeResident uint64
}

func (p rssPeak) String() string {
	return fmt.Sprintf("RSS %6.1f MiB = Go mapped %6.1f + glibc held %6.1f (in use %6.1f) + DuckDB's jemalloc resident %6.1f (allocated %6.1f, its buffer manager %6.1f) + %6.1f other",
		mib(p.rss), mib(p.goMapped), mib(p.cHeld), mib(p.cInUse), mib(p.jeResident), mib(p.jeAllocated), mib(p.duckdb), mib(p.rss)-mib(p.goMapped)-mib(p.cHeld)-mib(p.jeResident))
}

// rssWatch samples the process's memory every 100ms and keeps the sample with the largest RSS
// since the last take.
type rssWatch struct {
	mu   sync.Mutex
	top  rssPeak
	stop chan struct{}
	wg   sync.WaitGroup
}

func watchRSS(w *warehouse.Warehouse) *rssWatch {
	r := &rssWatch{stop: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			m := w.Memory(context.Background())
			r.mu.Lock()
			if m.RSS > r.top.rss {
				r.top = rssPeak{rss: m.RSS, goMapped: m.GoMapped, duckdb: m.DuckDB, cHeld: m.MallocHeld, cInUse: m.MallocInUse,
					jeAllocated: m.DuckDBAllocated, jeResident: m.DuckDBResident}
			}
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

func (r *rssWatch) take() rssPeak {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.top
	r.top = rssPeak{}
	return p
}

func (r *rssWatch) done() { close(r.stop); r.wg.Wait() }

func (s memSample) String() string {
	return fmt.Sprintf("%7d events: Go heap %6.1f MiB, Go mapped %6.1f MiB, RSS %6.1f MiB, duckdb_memory %6.1f MiB, C heap held %6.1f MiB (in use %6.1f), open runs %d (%d events); peaks so far: RSS %6.1f MiB, heap in use %6.1f MiB; the chunk's largest RSS: %v",
		s.events, mib(s.heap), mib(s.goMapped), mib(s.rss), mib(s.duckdb), mib(s.cHeld), mib(s.cInUse), s.openRuns, s.openEvents, mib(s.peakRSS), mib(s.peakHeap), s.top)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// vmRSS returns the process's resident set size in bytes (Linux), or 0.
func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// chunkMsgs returns about n events of finished synthetic harness runs, with ids above every id
// of the chunks before (studies memNNNNN-k sort by chunk), as a producer sends them.
func chunkMsgs(tb testing.TB, chunk, n int) []msg {
	var out []msg
	for st := 0; len(out) < n; st++ {
		s := newSynth(tb, fmt.Sprintf("mem%05d-%d", chunk, st))
		for r := 0; r < 1000 && len(s.out)+len(out) < n; r++ {
			s.run(fmt.Sprintf("run-%d", r), 1, runOpts{condition: "harness", variant: r % 3, retry: r%5 == 0})
		}
		out = append(out, s.out...)
	}
	return out
}

// steadyIngest runs Ingest against a broker in a child process while the test publishes
// chunks of chunkSize events, and samples memory after each chunk is stored.
func steadyIngest(t *testing.T, b *bus.Bus, w *warehouse.Warehouse, chunks, chunkSize int, cfg warehouse.IngestConfig) []memSample {
	ctx, cancel := context.WithCancel(warehousetest.Context(t, 10*time.Minute))
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ingest: %v", err)
		}
	}()
	mem := watchMemory()
	defer mem.done()
	rss := watchRSS(w)
	defer rss.done()
	var out []memSample
	published := 0
	for c := 0; c < chunks; c++ {
		msgs := chunkMsgs(t, c, chunkSize)
		warehousetest.PublishFast(t, b, msgs)
		published += len(msgs)
		msgs = nil
		deadline := time.Now().Add(5 * time.Minute)
		for w.Stats().Events < uint64(published) {
			if time.Now().After(deadline) {
				t.Fatalf("stored %d of %d events after 5 minutes", w.Stats().Events, published)
			}
			time.Sleep(20 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		debug.FreeOSMemory()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		st := w.Stats()
		cHeld, cInUse, _, _ := warehouse.ReadMalloc()
		s := memSample{cHeld: cHeld, cInUse: cInUse, top: rss.take(), events: published, heap: ms.HeapAlloc, goMapped: after.Sys - after.HeapReleased, rss: vmRSS(), peakRSS: vmHWM(), peakHeap: mem.peak.Load(), openRuns: st.OpenRuns, openEvents: st.OpenEvents}
		if err := w.DB().QueryRowContext(ctx, "SELECT sum(memory_usage_bytes)::UBIGINT FROM duckdb_memory()").Scan(&s.duckdb); err != nil {
			t.Fatal(err)
		}
		t.Log(s)
		out = append(out, s)
	}
	if p := os.Getenv("DITTO_MEM_PROFILE"); p != "" { // the heap profile of the live objects, for pprof
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestMemorySteadyIngest ingests finished runs in steady chunks, as in a sustained load run,
// and checks that the Go heap after GC plateaus: the heap after 3N events is at most the heap
// after N plus a small margin. (The broker runs in a child process, so its memory is not
// measured.) DITTO_MEM_CHUNKS and DITTO_MEM_CHUNK (events) scale it up, DITTO_MEM_LIMIT sets
// DuckDB's memory limit (default 256MB), DITTO_MEM_CHECKPOINT its checkpoint threshold (default
// warehouse.DefaultCheckpointThreshold), DITTO_MEM_KEEP_FREED=1 turns off the release of the
// allocators' free memory after commits, DITTO_MEM_EMBEDDED=1 runs the broker in this process
// (its memory is then measured too), DITTO_MEM_PROFILE=file writes a heap profile at the end.
func TestMemorySteadyIngest(t *testing.T) {
	chunks, size := 6, 20_000
	if testing.Short() {
		chunks, size = 3, 10_000
	}
	chunks = envInt("DITTO_MEM_CHUNKS", chunks)
	size = envInt("DITTO_MEM_CHUNK", size)
	limit := "256MB"
	if l := os.Getenv("DITTO_MEM_LIMIT"); l != "" {
		limit = l
	}
	if os.Getenv("DITTO_MEM_KEEP_FREED") != "" {
		defer warehouse.KeepFreed(warehouse.KeepFreed(true))
	}
	if os.Getenv("DITTO_MEM_PROFILE") != "" {
		defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
		runtime.MemProfileRate = 4096
	}
	// The broker runs in a child process unless DITTO_MEM_EMBEDDED is set: then it runs in this
	// process, as analyzer ingest hosts it by default, and its memory (which grows with the
	// stream: the duplicate window's ids, the subject tree, block caches) is measured and only
	// logged, not checked.
	embedded := os.Getenv("DITTO_MEM_EMBEDDED") != ""
	var b *bus.Bus
	if embedded {
		b = bustest.NewServer(t).Connect(t)
	} else {
		b = externalServer(t)
	}
	w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second),
		warehouse.Config{Path: filepath.Join(t.TempDir(), "mem.duckdb"), MemoryLimit: limit, CheckpointThreshold: os.Getenv("DITTO_MEM_CHECKPOINT")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var applied string
	if err := w.DB().QueryRow("SELECT current_setting('memory_limit')").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	var jemalloc bool
	if err := w.DB().QueryRow("SELECT count(*) > 0 FROM duckdb_extensions() WHERE extension_name = 'jemalloc' AND loaded").Scan(&jemalloc); err != nil {
		t.Fatal(err)
	}
	t.Logf("DuckDB memory_limit applied: %s; jemalloc loaded: %v", applied, jemalloc)
	samples := steadyIngest(t, b, w, chunks, size, warehouse.IngestConfig{BatchWait: 50 * time.Millisecond})
	// N is the first third of the run, 3N its end.
	logDuckDBMemory(t, w)
	n := samples[max(len(samples)/3-1, 0)]
	last := samples[len(samples)-1]
	const margin = 4 << 20 // the heap after GC is about 1 MiB; 4 MiB over 2N events is 50 bytes an event
	if embedded {
		t.Logf("Go heap after GC (the broker's included): %.1f MiB at %d events, %.1f MiB at %d",
			mib(n.heap), n.events, mib(last.heap), last.events)
	} else if last.heap > n.heap+margin {
		t.Errorf("Go heap after GC grew from %.1f MiB at %d events to %.1f MiB at %d: it grows with the events ingested",
			mib(n.heap), n.events, mib(last.heap), last.events)
	}
	if last.openRuns > 0 {
		t.Errorf("%d run attempts still held open after every run finished", last.openRuns)
	}
}

// logDuckDBMemory logs duckdb_memory() by tag.
func logDuckDBMemory(t *testing.T, w *warehouse.Warehouse) {
	rows, err := w.DB().Query("SELECT tag, memory_usage_bytes::UBIGINT, temporary_storage_bytes::UBIGINT FROM duckdb_memory() WHERE memory_usage_bytes > 0 OR temporary_storage_bytes > 0 ORDER BY 2 DESC")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var tag string
		var used, tmp uint64
		if err := rows.Scan(&tag, &used, &tmp); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MiB (temp %.1f)", tag, mib(used), mib(tmp)))
	}
	t.Logf("duckdb_memory: %s", strings.Join(parts, ", "))
}

// TestReleaseFreeMemory: after DuckDB frees the memory of a large query, its allocator keeps
// the pages (its decay time is seconds); releasing returns them, so that what stays resident
// is what is allocated and jemalloc's own metadata.
func TestReleaseFreeMemory(t *testing.T) {
	skipWithoutJemalloc(t)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// jemalloc's background thread (which warehouse.Open turns on, for the whole process)
	// would return the freed pages by itself: off while this test measures the release.
	var was bool
	if err := db.QueryRow("SELECT current_setting('allocator_background_threads')").Scan(&was); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("SET allocator_background_threads = false"); err != nil {
		t.Fatal(err)
	}
	defer db.Exec(fmt.Sprintf("SET allocator_background_threads = %v", was))
	sortStrings(t, db, 1_000_000)
	allocated, _, resident, _, _ := warehouse.ReadJemalloc()
	freed := int64(resident) - int64(allocated)
	warehouse.ReleaseFreeMemory()
	allocated2, _, resident2, _, _ := warehouse.ReadJemalloc()
	left := int64(resident2) - int64(allocated2)
	t.Logf("resident beyond allocated: %.1f MiB after the query, %.1f MiB after the release", mib(uint64(max(freed, 0))), mib(uint64(max(left, 0))))
	if freed < 32<<20 {
		t.Skipf("the query left only %.1f MiB of free pages: too few to tell a release", mib(uint64(max(freed, 0))))
	}
	if left > 16<<20 {
		t.Errorf("after the release jemalloc keeps %.1f MiB resident beyond what is allocated (%.1f before), want at most 16 MiB (its metadata)",
			mib(uint64(left)), mib(uint64(freed)))
	}
}

// skipWithoutJemalloc skips a test of DuckDB's allocator where it is not jemalloc.
func skipWithoutJemalloc(t *testing.T) {
	t.Helper()
	if _, _, _, _, ok := warehouse.ReadJemalloc(); !ok {
		t.Skip("DuckDB's allocator is not jemalloc in this build")
	}
}

// sortStrings sorts rows strings of some 70 bytes in db: a query that allocates (and then frees)
// memory in DuckDB's allocator in proportion to rows.
func sortStrings(t *testing.T, db *sql.DB, rows int) {
	t.Helper()
	var n int64
	if err := db.QueryRow(fmt.Sprintf("SELECT count(DISTINCT s) FROM (SELECT range::VARCHAR || repeat('x', 64) AS s FROM range(%d) ORDER BY s DESC)", rows)).Scan(&n); err != nil {
		t.Fatal(err)
	}
}

// TestAllocatorBackgroundThread: a warehouse turns on jemalloc's background thread, which
// returns the pages a query freed within about a second (its decay time), with no release by
// ditto and no further allocation. Without it they stay resident (TestReleaseFreeMemory).
func TestAllocatorBackgroundThread(t *testing.T) {
	skipWithoutJemalloc(t)
	w := openWH(t, tempDB(t))
	var on bool
	if err := w.DB().QueryRow("SELECT current_setting('allocator_background_threads')").Scan(&on); err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Fatal("allocator_background_threads is off in a warehouse")
	}
	sortStrings(t, w.DB(), 1_000_000)
	_, active, resident, _, _ := warehouse.ReadJemalloc()
	first := int64(resident) - int64(active)
	// The decay time is 1 s; the deadline leaves a loaded machine 20 times that.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, active, resident, _, _ = warehouse.ReadJemalloc()
		left := int64(resident) - int64(active)
		if left <= 16<<20 {
			t.Logf("freed pages resident: %.1f MiB after the query, %.1f MiB now", mib(uint64(max(first, 0))), mib(uint64(max(left, 0))))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jemalloc still holds %.1f MiB of freed pages 20 s after a query (%.1f right after it), want at most 16 MiB: no background thread returned them",
				mib(uint64(left)), mib(uint64(max(first, 0))))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMemoryJemallocParts: the warehouse's account of DuckDB's allocator nests as jemalloc
// defines it: what is allocated lies in active pages, and active pages are resident.
func TestMemoryJemallocParts(t *testing.T) {
	skipWithoutJemalloc(t)
	w := openWH(t, tempDB(t))
	sortStrings(t, w.DB(), 200_000)
	m := w.Memory(context.Background())
	t.Logf("jemalloc: allocated %.1f MiB, active %.1f, resident %.1f", mib(m.DuckDBAllocated), mib(m.DuckDBActive), mib(m.DuckDBResident))
	if m.DuckDBAllocated == 0 {
		t.Fatal("jemalloc reports nothing allocated after a query")
	}
	if m.DuckDBAllocated > m.DuckDBActive {
		t.Errorf("allocated %d bytes > active %d: the active pages must hold every allocation", m.DuckDBAllocated, m.DuckDBActive)
	}
	if m.DuckDBActive > m.DuckDBResident {
		t.Errorf("active %d bytes > resident %d: active pages are resident", m.DuckDBActive, m.DuckDBResident)
	}
}

// TestReleaseAfterCheckpoint: ingestion notices the checkpoints its commits make (the WAL
// shrinks) and releases the allocators' free memory after each, however recent the last release.
func TestReleaseAfterCheckpoint(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := chunkMsgs(t, 0, 20_000)
	warehousetest.PublishFast(t, b, msgs)
	w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second),
		warehouse.Config{Path: filepath.Join(t.TempDir(), "release.duckdb"), CheckpointThreshold: "1MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, before := warehouse.Releases()
	defer warehouse.KeepFreed(warehouse.KeepFreed(false))
	defer warehouse.ReleaseEvery(warehouse.ReleaseEvery(time.Hour)) // only checkpoints release
	if err := w.CatchUp(warehousetest.Context(t, 2*time.Minute), b, warehouse.IngestConfig{BatchSize: 2000, TxnBatches: 4}); err != nil {
		t.Fatal(err)
	}
	if _, after := warehouse.Releases(); after-before < 2 {
		t.Errorf("%d releases after checkpoints ingesting %d events at a 1MB checkpoint threshold, want one per checkpoint (several)", after-before, len(msgs))
	}
}

// TestReleaseAfterEveryCommit: between checkpoints, ingestion releases the allocators' free
// memory after a commit when the last release (or the first commit) is at least releaseEvery
// old: after every commit when that is 0, after none when it is an hour.
func TestReleaseAfterEveryCommit(t *testing.T) {
	defer warehouse.KeepFreed(warehouse.KeepFreed(false))
	for _, tc := range []struct {
		every time.Duration
		want  func(commits int64) int64
	}{
		{0, func(commits int64) int64 { return commits }},
		{time.Hour, func(int64) int64 { return 0 }},
	} {
		t.Run(tc.every.String(), func(t *testing.T) {
			defer warehouse.ReleaseEvery(warehouse.ReleaseEvery(tc.every))
			b := bustest.NewServer(t).Connect(t)
			msgs := chunkMsgs(t, 0, 10_000)
			warehousetest.PublishFast(t, b, msgs)
			// The default checkpoint threshold (far above these events' WAL): no commit checkpoints.
			w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: filepath.Join(t.TempDir(), "every.duckdb")})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			all, cps := warehouse.Releases()
			if err := w.CatchUp(warehousetest.Context(t, 2*time.Minute), b, warehouse.IngestConfig{BatchSize: 1000, TxnBatches: 1}); err != nil {
				t.Fatal(err)
			}
			all2, cps2 := warehouse.Releases()
			commits := int64(w.Stats().Batches)
			if cps2 != cps {
				t.Fatalf("%d commits checkpointed; the test needs none", cps2-cps)
			}
			if commits < 5 {
				t.Fatalf("%d commits for %d events in batches of 1000, want several", commits, len(msgs))
			}
			if got, want := all2-all, tc.want(commits); got != want {
				t.Errorf("releaseEvery %v: %d releases after %d commits, want %d", tc.every, got, commits, want)
			}
		})
	}
}

// Warehouse.Memory may be read (as the analyzer's stats line and memory watcher do) while
// ingestion builds and stores records: every event is stored once, and under the race detector
// (make test-race) the reads and the committer's writes of the counters it reads race in no
// way. The mallocator's own count, read plainly while written atomically, did (fixed with
// countedMalloc); TestMemorySteadyIngest, which found it, holds memory to bounds and is not run
// under the detector.
func TestMemoryReadWhileIngesting(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := benchMsgs(t, 20_000)
	warehousetest.PublishFast(t, b, msgs)
	w := openWH(t, tempDB(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := warehouse.IngestConfig{BatchSize: 1_000, TxnBatches: 2, BatchWait: 50 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, cfg) }()

	var reads, withRecords int
	for w.Stats().Watermark < uint64(len(msgs)) {
		if ctx.Err() != nil {
			t.Fatalf("watermark %d of %d after 2 minutes", w.Stats().Watermark, len(msgs))
		}
		if m := w.Memory(ctx); m.Records > 0 {
			withRecords++
		}
		reads++
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Ingest() = %v", err)
	}
	checkExact(t, w, msgs)
	if reads == 0 || withRecords == 0 {
		t.Errorf("Memory read %d times during ingestion, %d of them with records in C memory; want reads that saw records", reads, withRecords)
	}
	t.Logf("%d reads, %d with records", reads, withRecords)
}

// TestMemoryGauge: /metrics' ditto_analyzer_memory_bytes has one series for each part of the
// memory the process could read, with the value the ingest stats line would print, while
// ingestion runs, and leaves out a part it could not read (DuckDB's, once the database is
// closed) instead of saying 0.
func TestMemoryGauge(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	msgs := benchMsgs(t, 3_000)
	warehousetest.PublishFast(t, b, msgs)
	w := openWH(t, tempDB(t))
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collectors()...)
	// The filter of folded attempts is the ingester's: read while Ingest runs (it has its
	// first level from the first batch on), not after, when its levels may be returned to the
	// OS at any collection.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Ingest(ctx, b, warehouse.IngestConfig{BatchSize: 1_000}) }()
	catchUpWhileRunning(t, w, uint64(len(msgs)))

	parts := func() map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "ditto_analyzer_memory_bytes" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "part" {
						got[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		return got
	}
	before := w.Memory(ctx)
	got := parts()
	m := w.Memory(ctx)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Ingest() = %v", err)
	}
	var want []string
	for _, p := range m.Parts() {
		want = append(want, p.Name)
	}
	if len(got) != len(want) {
		t.Errorf("ditto_analyzer_memory_bytes has parts %v, want %v", got, want)
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("ditto_analyzer_memory_bytes lacks part %q (has %v)", name, got)
		}
	}
	if !slices.Contains(want, "duckdb") {
		t.Errorf("Memory of an open database reads no DuckDB buffer manager: parts %v", want)
	}
	for _, name := range []string{"go_heap", "go_mapped", "duckdb"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v bytes, want more than 0", name, got[name])
		}
	}
	if m.RSS > 0 && got["rss"] < 10<<20 {
		t.Errorf("rss = %v bytes: not the process's resident set (%d)", got["rss"], m.RSS)
	}
	// Levels of other tests' filters may be returned to the OS meanwhile (after a collection):
	// the gauge's figure is between the process's two reads around it, and at least this
	// ingester's first level.
	if lo, hi := min(before.Folded, m.Folded), max(before.Folded, m.Folded); runtime.GOOS == "linux" &&
		(got["folded"] < float64(max(lo, warehouse.FoldedFirstLevelBytes)) || got["folded"] > float64(hi)) {
		t.Errorf("folded = %v, want the filters' mapped bytes, %d to %d, and at least a first level's %d", got["folded"],
			lo, hi, warehouse.FoldedFirstLevelBytes)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	closed := parts()
	if _, ok := closed["duckdb"]; ok {
		t.Errorf("with the database closed, duckdb = %v: a part that cannot be read must be left out", closed["duckdb"])
	}
	if _, ok := closed["go_heap"]; !ok {
		t.Errorf("with the database closed, the Go heap is still read: parts %v", closed)
	}
}
