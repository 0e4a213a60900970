package warehouse_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/nats-io/nats.go/jetstream"
)

// benchMsgs returns at least n events of synthetic harness runs (about 27 events a run).
func benchMsgs(tb testing.TB, n int) []msg {
	var out []msg
	for st := 0; len(out) < n; st++ {
		s := newSynth(tb, fmt.Sprintf("bench%03d", st)) // ids sort in publishing order, as time-sortable ids do
		s.define([]events.Cell{{Task: "credit_ecl", Model: "sim-a", Condition: "harness", Runs: 1000}})
		for r := 0; r < 1000 && len(s.out)+len(out) < n; r++ {
			s.run(fmt.Sprintf("run-%d", r), 1, runOpts{condition: "harness", variant: r % 3, retry: r%5 == 0})
		}
		out = append(out, s.out...)
	}
	return out
}

// cpuTime returns this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// peakMemory samples the Go heap in use every 20ms until stop is called. It reads
// runtime/metrics, which does not stop the world: runtime.ReadMemStats, which it read before,
// stops every goroutine 50 times a second, and its pauses and preemptions were counted as the
// analyzer's CPU.
type peakMemory struct {
	peak atomic.Uint64
	live atomic.Uint64 // the largest heap marked live by a collection
	stop chan struct{}
	wg   sync.WaitGroup
	// profile, when DITTO_BENCH_HEAPPROFILE names a file, is the heap profile taken when a
	// collection found the most live heap: what the pipeline held at its fullest.
	profile bytes.Buffer
}

// heapInUse is the Go heap's spans in use (runtime.MemStats.HeapInuse): live and not yet swept
// objects, and the free space within their spans.
func heapInUse(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/gc/heap/live:bytes"}}
}

func watchMemory() *peakMemory {
	p := &peakMemory{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		s := heapSamples()
		profile := os.Getenv("DITTO_BENCH_HEAPPROFILE") != ""
		for {
			if h := heapInUse(s); h > p.peak.Load() {
				p.peak.Store(h)
			}
			if live := s[2].Value.Uint64(); live > p.live.Load() {
				p.live.Store(live)
				if profile {
					p.profile.Reset()
					_ = pprof.Lookup("heap").WriteTo(&p.profile, 0)
				}
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakMemory) done() uint64 { close(p.stop); p.wg.Wait(); return p.peak.Load() }

// procCPU returns the user+system CPU time of process pid (Linux /proc), or 0.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) in parentheses; utime and stime
	// are fields 14 and 15, in clock ticks of 1/100 s.
	rest := string(raw)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// vmHWM returns the process's peak resident set size in bytes (Linux), or 0.
func vmHWM() uint64 { return warehouse.ProcStatus("VmHWM:") }

// referenceConsume is the broker's own limit: a consumer configured like the analyzer's that
// only fetches the messages and acknowledges each batch (cumulatively, as the analyzer does).
// It takes them through the client's cheapest API, the one the analyzer uses (Consume, a
// callback per message): through the iterator (Messages, Next per message) its client cost about
// 0.45 µs more an event.
func referenceConsume(tb testing.TB, b *bus.Bus, n int, durable string, batch int) time.Duration {
	ctx := warehousetest.Context(tb, 10*time.Minute)
	c, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: durable, AckWait: time.Minute, MaxAckPending: 5 * batch}, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	defer b.DeleteConsumer(context.Background(), events.EventsStream, durable)
	done := make(chan error, 1)
	finish := func(err error) {
		select {
		case done <- err:
		default:
		}
	}
	start := time.Now()
	got := 0
	cc, err := c.Consume(func(m jetstream.Msg) {
		if got == n {
			return
		}
		got++
		if got%batch == 0 || got == n {
			if err := m.Ack(); err != nil {
				finish(err)
			}
		}
		if got == n {
			finish(nil)
		}
	}, jetstream.PullMaxMessages(batch), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { finish(err) }))
	if err != nil {
		tb.Fatal(err)
	}
	defer cc.Stop()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatal(err)
		}
	case <-ctx.Done():
		tb.Fatal(ctx.Err())
	}
	return time.Since(start)
}

type ingestFigures struct {
	took time.Duration
	// cpu is the process's CPU time from the start of ingestion to the end of the close (its
	// last checkpoint), as storeOnly counts DuckDB's part alone: opening the database (its
	// schema, some 0.1 s once per process) is not a cost of the events.
	cpu       time.Duration
	peakHeap  uint64 // peak heap in use during ingestion
	baseHeap  uint64 // heap in use before, after a GC (the broker's state included)
	peakLive  uint64 // the largest heap a collection marked live during ingestion
	baseLive  uint64 // the heap marked live by the GC before ingestion
	fileBytes int64
	// cHeapLeft is the C heap in use beyond the events' records that ingestion left behind
	// while the database stays open (glibc's account; DuckDB's buffers are in its own
	// allocator): what the analyzer's process under load was seen to grow by, about 2 bytes an
	// event (deploy/README.md, "Five minutes and twelve").
	cHeapLeft int64
	// allocs is the Go heap's bytes allocated from the start of ingestion to the end of the
	// close, objects the allocations, and gcs the collections that ran meanwhile.
	allocs, objects, gcs uint64
}

// allocated returns the bytes the Go heap has allocated, its allocations, and the collections
// it has run since the process started (runtime/metrics, which does not stop the world).
func allocated() (bytes, objects, cycles uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"},
		{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

func analyzerConsume(tb testing.TB, b *bus.Bus, n int, durable string, cfg warehouse.IngestConfig) ingestFigures {
	dir := tb.TempDir()
	path := filepath.Join(dir, "bench.duckdb")
	ctx := warehousetest.Context(tb, 10*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: path, Threads: benchThreads(),
		CheckpointThreshold: os.Getenv("DITTO_BENCH_CHECKPOINT")})
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	samples := heapSamples()
	base := heapInUse(samples)
	baseLive := samples[2].Value.Uint64()
	c0 := cHeapBeyondRecords(w)
	mem := watchMemory()
	cfg.Durable = durable
	a0, o0, g0 := allocated()
	start, cpu0 := time.Now(), cpuTime()
	if err := w.CatchUp(ctx, b, cfg); err != nil {
		tb.Fatal(err)
	}
	took := time.Since(start)
	peak := mem.done()
	if p := os.Getenv("DITTO_BENCH_HEAPPROFILE"); p != "" {
		if err := os.WriteFile(p, mem.profile.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if got := w.Stats().Events; got != uint64(n) {
		tb.Fatalf("stored %d events, want %d", got, n)
	}
	left := cHeapBeyondRecords(w) - c0
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	cpu := cpuTime() - cpu0
	a1, o1, g1 := allocated()
	var size int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			size += fi.Size()
		}
	}
	return ingestFigures{took: took, cpu: cpu, peakHeap: peak, baseHeap: base, peakLive: mem.live.Load(), baseLive: baseLive, fileBytes: size, cHeapLeft: left,
		allocs: a1 - a0, objects: o1 - o0, gcs: g1 - g0}
}

// cHeapBeyondRecords is the C heap in use beyond the events' Arrow records (glibc's account,
// 0 where the C library is not glibc).
func cHeapBeyondRecords(w *warehouse.Warehouse) int64 {
	m := w.Memory(context.Background())
	return int64(m.MallocInUse) - int64(m.Records)
}

// BenchmarkIngest measures the whole analyzer path (fetch, decode, Arrow, DuckDB commit, ack)
// on a pre-filled stream, against a reference consumer that only fetches and acks the same
// messages from the same stream in the same run. DITTO_BENCH_EVENTS sets the number of events
// (default 200,000 rounded up to whole batches), DITTO_BENCH_BATCH the batch size, DITTO_BENCH_TXN_BATCHES the batches a
// transaction holds at most (IngestConfig.TxnBatches), DITTO_BENCH_THREADS DuckDB's threads,
// DITTO_BENCH_CPUPROFILE a file for a CPU profile of the analyzer's part,
// DITTO_BENCH_BROKER_CPUPROFILE a file for one of the broker's process during the analyzer's
// part (and the file with ".ref" appended during the reference's), DITTO_BENCH_HEAPPROFILE a file for the heap profile taken when a collection found the most
// live heap (run with -test.memprofilerate=4096 for a finer one; the profiles written during a
// pass count in its alloc-B/event). Besides the peak heap in use
// (live objects, garbage not yet collected and free space in spans: what GOGC's pacing lets
// grow to about twice the live heap) it reports the peak live heap, what the pipeline held.
// Run: go test -run '^$' -bench BenchmarkIngest -benchtime=1x ./internal/warehouse
func BenchmarkIngest(b *testing.B) {
	batch := envInt("DITTO_BENCH_BATCH", warehouse.DefaultBatchSize)
	// 200,000 events rounded up to whole batches (204,800 with batches of 10,240): a last batch
	// that does not fill waits BatchWait (500 ms) for events that never come, a quarter of a
	// pass's time, which a backlog of any size pays once and this benchmark would pay in every
	// pass. 200,000 was whole batches of the 10,000 the batch was until 2026-12-04.
	n := envInt("DITTO_BENCH_EVENTS", (200_000+batch-1)/batch*batch)
	bs, brokerPID := externalServerPID(b) // the broker in its own process, as in production
	msgs := benchMsgs(b, n)[:n]
	var raw int
	for _, m := range msgs {
		raw += len(m.Data)
	}
	warehousetest.PublishFast(b, bs, msgs)
	// DuckDB's part alone first, so that the messages can be let go before the consumers run:
	// held by the benchmark, they were half the heap when ingestion started, and a heap twice
	// its live size before the next collection (GOGC=100) let the analyzer's garbage pile up
	// to about their size, which the heap growth then counted as the analyzer's.
	storeCPU := storeOnly(b, msgs, batch)
	msgs = nil
	// A pass that reads every message once before anything is measured, so that the reference
	// and the analyzer both start on a broker that has just delivered the stream. Without it the
	// reference ran first on a stream not read since it was published (and some seconds after,
	// DuckDB's part alone taking them) and cost its client about twice the CPU an event (6.5–7.2
	// against 3.1–3.3 µs at idle, where it ran right after publishing), while the analyzer came
	// right after the reference's reading: the ratio compared unlike conditions.
	referenceConsume(b, bs, n, "bench-warm", batch)
	b.ResetTimer()
	// Each pass runs the reference and then the analyzer on the same stream; every figure is
	// the median of the passes' own (-benchtime 3x: three passes), so that one pass disturbed
	// by the machine's neighbours does not move it.
	var passes []ingestPass
	var fig ingestFigures
	for i := 0; i < b.N; i++ {
		c0, b0 := cpuTime(), procCPU(brokerPID)
		ra0, ro0, rg0 := allocated()
		stopBroker := profileBroker(b, brokerPID, brokerProfile(".ref"))
		ref := referenceConsume(b, bs, n, fmt.Sprintf("bench-ref-%d", i), batch)
		stopBroker()
		c1, b1 := cpuTime(), procCPU(brokerPID)
		ra1, ro1, rg1 := allocated()
		stopProfile := profileTo(b, os.Getenv("DITTO_BENCH_CPUPROFILE"))
		stopBroker = profileBroker(b, brokerPID, brokerProfile(""))
		f := analyzerConsume(b, bs, n, fmt.Sprintf("bench-wh-%d", i), warehouse.IngestConfig{BatchSize: batch, TxnBatches: envInt("DITTO_BENCH_TXN_BATCHES", 0)})
		stopBroker()
		stopProfile()
		b2 := procCPU(brokerPID)
		p := newIngestPass(n, runtime.NumCPU(), storeCPU, ref, c1-c0, b1-b0, f.took, f.cpu, b2-b1)
		p.cHeapLeft = float64(f.cHeapLeft) / float64(n)
		p.allocs, p.gcs = float64(f.allocs)/float64(n), float64(f.gcs)
		p.refAllocs, p.refGCs = float64(ra1-ra0)/float64(n), float64(rg1-rg0)
		p.objects, p.refObjects = float64(f.objects)/float64(n), float64(ro1-ro0)/float64(n)
		passes = append(passes, p)
		fig.peakHeap = max(fig.peakHeap, f.peakHeap-min(f.baseHeap, f.peakHeap))
		fig.peakLive = max(fig.peakLive, f.peakLive-min(f.baseLive, f.peakLive))
		fig.fileBytes = f.fileBytes
	}
	b.StopTimer()
	med := func(of func(p ingestPass) float64) float64 {
		xs := make([]float64, len(passes))
		for i, p := range passes {
			xs[i] = of(p)
		}
		slices.Sort(xs)
		k := len(xs)
		return (xs[(k-1)/2] + xs[k/2]) / 2
	}
	whRate, refRate := med(func(p ingestPass) float64 { return p.rate }), med(func(p ingestPass) float64 { return p.refRate })
	cpu, broker := med(func(p ingestPass) float64 { return p.cpu }), med(func(p ingestPass) float64 { return p.broker })
	refCPU, refBroker := med(func(p ingestPass) float64 { return p.refCPU }), med(func(p ingestPass) float64 { return p.refBroker })
	floor, ceiling := med(func(p ingestPass) float64 { return p.floor }), med(func(p ingestPass) float64 { return p.ceiling })
	cpuFloor := med(func(p ingestPass) float64 { return p.cpuFloor })
	beyond := med(func(p ingestPass) float64 { return p.cpu - p.cpuFloor })
	overFloor := med(ingestPass.overFloor)
	ratio, ofCeiling := med(func(p ingestPass) float64 { return p.rate / p.refRate }), med(func(p ingestPass) float64 { return p.rate / p.ceiling })
	ceilingRatio := med(func(p ingestPass) float64 { return p.ceiling / p.refRate })
	storeUS := float64(storeCPU.Microseconds()) / float64(n)
	b.ReportMetric(whRate, "events/s")
	b.ReportMetric(refRate, "ref-events/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(fig.fileBytes)/float64(n), "duckdb-bytes/event")
	b.ReportMetric(float64(fig.peakHeap)/(1<<20), "peak-heap-growth-MiB")
	b.ReportMetric(float64(fig.peakLive)/(1<<20), "peak-live-growth-MiB")
	b.ReportMetric(cpu, "cpu-µs/event")
	b.ReportMetric(broker, "broker-cpu-µs/event")
	b.ReportMetric(refCPU, "ref-cpu-µs/event")
	b.ReportMetric(refBroker, "ref-broker-cpu-µs/event")
	b.ReportMetric(storeUS, "duckdb-only-cpu-µs/event")
	b.ReportMetric(cpuFloor, "cpu-floor-µs/event")
	b.ReportMetric(beyond, "beyond-floor-cpu-µs/event")
	b.ReportMetric(overFloor, "cpu-over-floor")
	b.ReportMetric(ceilingRatio, "ceiling-ratio")
	b.ReportMetric(ofCeiling, "of-ceiling")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.allocs }), "alloc-B/event")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.refAllocs }), "ref-alloc-B/event")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.objects }), "allocs/event")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.refObjects }), "ref-allocs/event")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.gcs }), "gc-cycles")
	b.ReportMetric(med(func(p ingestPass) float64 { return p.refGCs }), "ref-gc-cycles")
	if _, _, _, ok := warehouse.ReadMalloc(); ok {
		b.ReportMetric(med(func(p ingestPass) float64 { return p.cHeapLeft }), "c-heap-left-B/event")
	}
	fmt.Printf("ingest bench ceiling (median of %d passes): DuckDB's part alone (load + watermark + commit of the same events in batches of %d, decoded beforehand) costs %.1f µs CPU/event; with the reference's %.1f µs (client) + %.1f µs (broker), no analyzer storing in DuckDB can exceed %d cores / %.1f µs = %.0f events/s here, a ratio of %.2f to the reference\n",
		len(passes), batch, storeUS, refCPU, refBroker, runtime.NumCPU(), floor, ceiling, ceilingRatio)
	fmt.Printf("ingest bench CPU floor: no analyzer storing in DuckDB spends less than the reference's client plus DuckDB's part alone, %.1f µs CPU/event here; this one spends %.1f, %.1f beyond the floor, %.2f times it (the issue's 8 µs was %.2f times the floor of %.1f µs it was set beside)\n",
		cpuFloor, cpu, beyond, overFloor, goalCPU/goalFloor, goalFloor)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("ingest bench (%s path, DuckDB threads %d, %d events of %d bytes mean, batch %d): analyzer %.0f events/s, reference fetch+ack %.0f events/s, ratio %.2f (%.2f of the ceiling); CPU per event: analyzer %.1f µs + broker %.1f µs, reference %.1f µs + broker %.1f µs (broker in a child process); DuckDB %.1f bytes/event; peak Go heap in use %.1f MiB above the heap before ingestion (after a collection; the benchmark holds none of its messages then); peak RSS of the test process %.1f MiB; load average %s\n",
		warehouse.LoadPath, benchThreads(), n, raw/n, batch, whRate, refRate, ratio, ofCeiling, cpu, broker, refCPU, refBroker,
		float64(fig.fileBytes)/float64(n), float64(fig.peakHeap)/(1<<20), float64(vmHWM())/(1<<20), strings.Fields(string(load) + " ?")[0])
}

// ingestPass is one pass of BenchmarkIngest: the reference's and the analyzer's rates and CPU
// per event (µs), and the floor and ceiling they give with DuckDB's part alone.
type ingestPass struct {
	rate, refRate                  float64 // events/s
	cpu, broker, refCPU, refBroker float64 // µs CPU per event
	floor, cpuFloor, ceiling       float64 // µs, µs, events/s
	cHeapLeft                      float64 // bytes of C heap left in use an event (ingestFigures.cHeapLeft)
	allocs, refAllocs              float64 // Go heap bytes allocated an event
	objects, refObjects            float64 // Go heap allocations an event
	gcs, refGCs                    float64 // collections in the pass
}

func newIngestPass(n, cores int, store, ref, refCPU, refBroker, took, cpu, broker time.Duration) ingestPass {
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	p := ingestPass{rate: float64(n) / took.Seconds(), refRate: float64(n) / ref.Seconds(),
		cpu: us(cpu), broker: us(broker), refCPU: us(refCPU), refBroker: us(refBroker)}
	// The ceiling: any analyzer that stores these events in DuckDB spends at least the
	// reference's CPU per event (its own fetch and ack, and the broker's delivery) plus DuckDB's
	// part alone; on this machine's cores it cannot go faster than cores / that sum.
	p.floor = p.refCPU + p.refBroker + us(store)
	p.ceiling = float64(cores) / p.floor * 1e6
	// The analyzer's own CPU floor: its process must at least do the reference client's work
	// (take the messages from the broker and ack them) and DuckDB's part alone, so no analyzer
	// can spend less CPU an event here than their sum; what it spends beyond that is its own
	// (decoding, the fold, the Arrow record, its collector's share). All three move with the
	// machine: on 2026-12-02 the reference's client cost 3.9 µs an event on one machine and
	// 5.4–7.2 on another, so a goal in µs holds only beside the floor measured with it.
	p.cpuFloor = p.refCPU + us(store)
	return p
}

// overFloor is the analyzer's CPU an event as a multiple of the floor measured in the same pass.
// On a machine that runs slower, the floor and the analyzer's own work both slow down: over 44
// runs in two sessions two hours apart (2026-12-06) the analyzer's CPU rose 1.14 µs for each µs
// of the floor (95% interval about 0.8–1.5, r = 0.74), its median from 7.9 to 9.3 µs, while
// each run's CPU over its floor had medians of 1.32–1.33 in all three series
// (docs/benchmarks.md, thirty-second session).
func (p ingestPass) overFloor() float64 { return p.cpu / p.cpuFloor }

// The issue that set the CPU goal (≤ goalCPU µs an event) measured, on its day, the reference's
// client at 2.3 µs an event and DuckDB's part alone at 3.0: a floor of goalFloor, of which the
// goal was 1.51 times. BenchmarkIngest prints that multiple beside the one it measures.
const (
	goalCPU   = 8.0
	goalFloor = 2.3 + 3.0
)

// storeOnly stores msgs in a fresh database with DuckDB's part alone (no broker, no fold) and
// returns its CPU time.
func storeOnly(tb testing.TB, msgs []msg, batch int) time.Duration {
	ctx := warehousetest.Context(tb, 10*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(tb.TempDir(), "store.duckdb"),
		Threads: benchThreads(), CheckpointThreshold: os.Getenv("DITTO_BENCH_CHECKPOINT")})
	if err != nil {
		tb.Fatal(err)
	}
	subjects := make([]string, len(msgs))
	raws := make([][]byte, len(msgs))
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	cpu, err := warehouse.StoreOnlyForBench(ctx, w, subjects, raws, batch)
	if err != nil {
		tb.Fatal(err)
	}
	return cpu + closeCPU(tb, w)
}

// closeCPU closes w and returns the CPU time the close took: its last checkpoint writes what
// the WAL still holds, work that the transactions before it deferred (the larger the checkpoint
// threshold, the more), so a measurement of storing counts it as the analyzer's does.
func closeCPU(tb testing.TB, w *warehouse.Warehouse) time.Duration {
	c0 := cpuTime()
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return cpuTime() - c0
}

// benchThreads is DuckDB's threads in the benchmark: DITTO_BENCH_THREADS, else what
// analyzer ingest uses.
func benchThreads() int { return envInt("DITTO_BENCH_THREADS", warehouse.IngestThreads) }

// brokerProfile is the file for a CPU profile of the broker's process during the analyzer's part
// (DITTO_BENCH_BROKER_CPUPROFILE), or with suffix ".ref" during the reference's; "" without it.
func brokerProfile(suffix string) string {
	if p := os.Getenv("DITTO_BENCH_BROKER_CPUPROFILE"); p != "" {
		return p + suffix
	}
	return ""
}

// profileTo writes a CPU profile of the analyzer's part alone to path (none if path is empty).
func profileTo(tb testing.TB, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// TestMemoryBoundedUnderBacklog ingests a backlog and a ten times larger one with the same
// settings: the peak heap must not grow with the backlog.
func TestMemoryBoundedUnderBacklog(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1000
	}
	cfg := warehouse.IngestConfig{BatchSize: 500, BatchWait: 50 * time.Millisecond, MaxOpenEvents: 2000}
	// The broker runs in a child process: its state (duplicate-window ids, block caches) grows
	// with the stream and is not the analyzer's. Measure the growth of this process's heap
	// during ingestion, with the GC kept tight so that garbage does not blur the peak.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	growth := func(k int) uint64 {
		bs := externalServer(t)
		msgs := benchMsgs(t, k)[:k]
		warehousetest.PublishFast(t, bs, msgs)
		msgs = nil
		f := analyzerConsume(t, bs, k, "mem", cfg)
		if f.peakHeap < f.baseHeap {
			return 0
		}
		return f.peakHeap - f.baseHeap
	}
	small := growth(n)
	large := growth(10 * n)
	t.Logf("heap growth during ingestion: %.1f MiB for %d events, %.1f MiB for %d", float64(small)/(1<<20), n, float64(large)/(1<<20), 10*n)
	if large > 2*small+(8<<20) {
		t.Errorf("heap grew by %d bytes for a 10x backlog, %d for 1x: memory grows with the backlog", large, small)
	}
}

// TestIngestPassFloor: a pass's CPU floor is the reference's client plus DuckDB's part alone,
// and its multiple the analyzer's CPU over that floor, per event; the ceiling is the cores over
// the floor with the broker's part added.
func TestIngestPassFloor(t *testing.T) {
	const n = 1000
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	// Per event: DuckDB 3 µs, reference client 2.5 µs and broker 4.5 µs, analyzer 7.5 µs.
	p := newIngestPass(n, 2, ms(3), time.Second, ms(2.5), ms(4.5), time.Second, ms(7.5), ms(4))
	if p.cpuFloor != 5.5 {
		t.Errorf("floor %v µs, want 5.5", p.cpuFloor)
	}
	if got, want := p.overFloor(), 7.5/5.5; got != want {
		t.Errorf("multiple of the floor %v, want %v", got, want)
	}
	if p.floor != 10 || p.ceiling != 200_000 {
		t.Errorf("ceiling floor %v µs, ceiling %v events/s; want 10 and 200,000", p.floor, p.ceiling)
	}
	if r := goalCPU / goalFloor; r < 1.50 || r > 1.51 {
		t.Errorf("the issue's goal over its floor is %v, want 8/5.3", r)
	}
}
