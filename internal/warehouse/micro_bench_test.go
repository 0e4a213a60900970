package warehouse_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/queries"
)

// BenchmarkDecode is the fetcher's CPU per event: decode and validate (keeping the payload's bytes), and
// build the Arrow record.
func BenchmarkDecode(b *testing.B) {
	msgs := benchMsgs(b, 10000)
	subjects := make([]string, len(msgs))
	raws := make([][]byte, len(msgs))
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if n := warehouse.DecodeForBench(subjects, raws); n != len(msgs) {
			b.Fatalf("decoded %d of %d", n, len(msgs))
		}
	}
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/1000/float64(b.N*len(msgs)), "cpu-µs/event")
}

// BenchmarkDecodeItem is the decoders' part of BenchmarkDecode: decode and validate one
// event, without the Arrow record. One op is one event.
func BenchmarkDecodeItem(b *testing.B) {
	subjects, raws := benchRaws(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i += len(raws) {
		n := min(len(raws), b.N-i)
		if got := warehouse.DecodeOnlyForBench(subjects[:n], raws[:n]); got != n {
			b.Fatalf("decoded %d of %d", got, n)
		}
	}
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkBuildRecord is the Arrow record's part of BenchmarkDecode: one batch of 10,000
// events, decoded beforehand, built into a record and released. One op is one event.
func BenchmarkBuildRecord(b *testing.B) {
	subjects, raws := benchRaws(b, 10000)
	d := warehouse.DecodeItemsForBench(subjects, raws)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i += len(raws) {
		if n := warehouse.BuildForBench(d); n != len(raws) {
			b.Fatalf("built %d rows of %d", n, len(raws))
		}
	}
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// benchRaws returns the subjects and bodies of n of the benchmark's messages.
func benchRaws(b *testing.B, n int) ([]string, [][]byte) {
	msgs := benchMsgs(b, n)[:n]
	subjects := make([]string, n)
	raws := make([][]byte, n)
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	return subjects, raws
}

// BenchmarkFold is the committer's CPU per finished run folded from memory.
func BenchmarkFold(b *testing.B) {
	s := newSynth(b, "fold")
	s.run("r", 1, runOpts{condition: "harness", retry: true})
	var h []events.Envelope
	for _, m := range s.out {
		e, _ := events.Decode(m.Data)
		h = append(h, e)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		warehouse.FoldForBench(h)
	}
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/1000/float64(b.N*len(h)), "cpu-µs/event")
}

// BenchmarkStore is the committer's CPU per event without the broker: the same events as
// BenchmarkIngest, decoded beforehand, committed in batches as ingestion does (events, run_folds,
// watermark and commit in one transaction per batch), beside DuckDB's part alone (the events'
// load, watermark and commit, no fold), each with the last checkpoint of the database's close
// (what the WAL still holds when the storing ends). DITTO_BENCH_EVENTS sets the events (default 200,000),
// DITTO_BENCH_TXN_BATCHES the batches a transaction (default warehouse.DefaultTxnBatches),
// DITTO_BENCH_CPUPROFILE a file for a CPU profile of the committer. c-heap-left-B/event is
// the C heap in use beyond the events' records that the storing leaves behind while the
// database stays open (glibc's account, where the C library is glibc), per event stored.
func BenchmarkStore(b *testing.B) {
	n := envInt("DITTO_BENCH_EVENTS", 200_000)
	batch := envInt("DITTO_BENCH_BATCH", warehouse.DefaultBatchSize)
	msgs := benchMsgs(b, n)[:n]
	subjects := make([]string, n)
	raws := make([][]byte, n)
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	open := func() *warehouse.Warehouse {
		w, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(b.TempDir(), "store.duckdb"),
			Threads: benchThreads(), CheckpointThreshold: os.Getenv("DITTO_BENCH_CHECKPOINT")})
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	b.ResetTimer()
	var store, only time.Duration
	var left int64
	for i := 0; i < b.N; i++ {
		w := open()
		c0 := cHeapBeyondRecords(w)
		stop := profileTo(b, os.Getenv("DITTO_BENCH_CPUPROFILE"))
		cpu, err := warehouse.StoreForBench(context.Background(), w, subjects, raws, batch, envInt("DITTO_BENCH_TXN_BATCHES", 0))
		stop()
		if err != nil {
			b.Fatal(err)
		}
		if got := w.Stats().Events; got != uint64(n) {
			b.Fatalf("stored %d events, want %d", got, n)
		}
		left += cHeapBeyondRecords(w) - c0 // what storing leaves until the database closes
		store += cpu + closeCPU(b, w)
		w = open()
		cpu, err = warehouse.StoreOnlyForBench(context.Background(), w, subjects, raws, batch)
		if err != nil {
			b.Fatal(err)
		}
		only += cpu + closeCPU(b, w)
	}
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(n*b.N) }
	b.ReportMetric(perEvent(store), "cpu-µs/event")
	b.ReportMetric(perEvent(only), "duckdb-only-cpu-µs/event")
	if _, _, _, ok := warehouse.ReadMalloc(); ok {
		b.ReportMetric(float64(left)/float64(n*b.N), "c-heap-left-B/event")
	}
}

// BenchmarkExistingIDs runs the stored-id probe (ingest_existing_ids, a join, and
// ingest_existing_ids_few, a test against the list) on a database of DITTO_BENCH_EVENTS events
// (default 200,000) with DITTO_BENCH_IDS candidate ids (default 20; spread over the later half of
// the events, so that their range holds that half), and reports the C heap in use beyond the events'
// records that each call leaves behind while the database stays open (c-heap-left-B/call,
// glibc's account): what a probe a batch adds to the analyzer's process for good.
func BenchmarkExistingIDs(b *testing.B) {
	n := envInt("DITTO_BENCH_EVENTS", 200_000)
	msgs := benchMsgs(b, n)[:n]
	subjects := make([]string, n)
	raws := make([][]byte, n)
	ids := make([]string, 0, envInt("DITTO_BENCH_IDS", 20))
	for i, m := range msgs {
		subjects[i], raws[i] = m.Subject, m.Data
	}
	step := max(1, n/2/cap(ids))
	for i := n / 2; len(ids) < cap(ids); i += step {
		ids = append(ids, msgs[i].ID) // the envelope's id, which the producer sends as Nats-Msg-Id
	}
	lo, hi := slices.Min(ids), slices.Max(ids)
	for _, q := range []queries.Statement{queries.IngestExistingIDs, queries.IngestExistingIDsFew} {
		b.Run(q.Name, func(b *testing.B) {
			w, err := warehouse.Open(context.Background(), warehouse.Config{Path: filepath.Join(b.TempDir(), "ids.duckdb"), Threads: benchThreads()})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if _, err := warehouse.StoreForBench(context.Background(), w, subjects, raws, warehouse.DefaultBatchSize, 0); err != nil {
				b.Fatal(err)
			}
			call := func() {
				rows, err := w.DB().QueryContext(context.Background(), q.SQL, lo, hi, ids)
				if err != nil {
					b.Fatal(err)
				}
				found := 0
				for rows.Next() {
					found++
				}
				if err := rows.Close(); err != nil || found != len(ids) {
					b.Fatalf("%s found %d of %d stored ids (%v)", q.Name, found, len(ids), err)
				}
			}
			for i := 0; i < 100; i++ { // warm: DuckDB's caches and pools
				call()
			}
			c0 := cHeapBeyondRecords(w)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				call()
			}
			b.StopTimer()
			if _, _, _, ok := warehouse.ReadMalloc(); ok {
				b.ReportMetric(float64(cHeapBeyondRecords(w)-c0)/float64(b.N), "c-heap-left-B/call")
			}
		})
	}
}
