package warehouse

import (
	"context"
	"database/sql"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dittolab/ditto/events"
)

// DecodeForBench decodes raw messages as the fetcher does and returns how many were good.
func DecodeForBench(subjects []string, raws [][]byte) int {
	items := make([]*item, len(raws))
	for i := range raws {
		items[i] = &item{subject: subjects[i], raw: raws[i]}
		decodeItem(items[i])
	}
	br := buildFor(items)
	defer br.release()
	_ = memory.DefaultAllocator
	return len(br.items)
}

// DecodeOnlyForBench decodes raw messages as the fetcher's decoders do, without building the
// Arrow record, and returns how many were good.
func DecodeOnlyForBench(subjects []string, raws [][]byte) int {
	good := 0
	for i := range raws {
		it := &item{subject: subjects[i], raw: raws[i]}
		decodeItem(it)
		if it.rej == nil {
			good++
		}
	}
	return good
}

// DecodedForBench is a batch decoded beforehand, for BuildForBench.
type DecodedForBench struct{ items []*item }

// DecodeItemsForBench decodes raw messages as the fetcher does and keeps them.
func DecodeItemsForBench(subjects []string, raws [][]byte) DecodedForBench {
	items := make([]*item, len(raws))
	for i := range raws {
		items[i] = &item{subject: subjects[i], raw: raws[i], streamSeq: uint64(i + 1)}
		decodeItem(items[i])
	}
	return DecodedForBench{items}
}

// BuildForBench builds and releases the batch's Arrow record as the fetcher does; it returns
// the record's rows.
func BuildForBench(d DecodedForBench) int {
	br := buildFor(d.items)
	defer br.release()
	return int(br.rec.NumRows())
}

// FoldForBench folds a history, sorted by seq, as the committer does from memory: event by
// event as it arrives, then the row.
func FoldForBench(h []events.Envelope) int {
	var f foldState
	for i := range h {
		f.add(&h[i])
	}
	row, _ := f.row(attemptKey{h[0].Study, h[0].Run, h[0].Attempt})
	if row == nil {
		return 0
	}
	return int(row.events)
}

// StoreOnlyForBench measures DuckDB's part alone: it decodes the messages and builds their
// Arrow records first, then stores them in w in transactions of batch events (load, watermark,
// commit, as the committer does, without the fold) and returns the process CPU time of the
// storing.
func StoreOnlyForBench(ctx context.Context, w *Warehouse, subjects []string, raws [][]byte, batch int) (time.Duration, error) {
	var recs []*builtRecord
	defer func() {
		for _, r := range recs {
			r.release()
		}
	}()
	for off := 0; off < len(raws); off += batch {
		end := min(off+batch, len(raws))
		items := make([]*item, 0, end-off)
		for i := off; i < end; i++ {
			it := &item{subject: subjects[i], raw: raws[i], streamSeq: uint64(i + 1)}
			decodeItem(it)
			items = append(items, it)
		}
		recs = append(recs, buildFor(items))
	}
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	cpu0 := cpuNow()
	loader, err := newEventLoader(conn)
	if err != nil {
		return 0, err
	}
	defer loader.close()
	for i, r := range recs {
		if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return 0, err
		}
		if err := loader.load(ctx, r.rec); err != nil {
			return 0, err
		}
		if err := setWatermark(ctx, conn, "bench", uint64(i+1), len(r.items), 0, 0); err != nil {
			return 0, err
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return 0, err
		}
	}
	return cpuNow() - cpu0, nil
}

// StoreForBench measures the committer alone: it decodes the messages and builds their Arrow
// records first (the fetcher's part), then commits them in batches of size events as ingestion
// does with a backlog, the transaction held open across up to txnBatches batches (0: the
// default) (load, run_folds, watermark, commit, the open runs tracked in memory), without a
// broker. It returns the process CPU time of the committing.
func StoreForBench(ctx context.Context, w *Warehouse, subjects []string, raws [][]byte, size, txnBatches int) (time.Duration, error) {
	var batches []*batch
	defer func() {
		for _, b := range batches {
			b.release()
		}
	}()
	for off := 0; off < len(raws); off += size {
		end := min(off+size, len(raws))
		// A backlog: messages pending beyond every batch but the last.
		b := &batch{lag: uint64(len(raws) - end)}
		for i := off; i < end; i++ {
			b.items = append(b.items, &item{subject: subjects[i], raw: raws[i], streamSeq: uint64(i + 1)})
			b.bytes += len(raws[i])
		}
		decodeBatch(b)
		batches = append(batches, b)
	}
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	cfg := IngestConfig{BatchSize: size, TxnBatches: txnBatches}.withDefaults()
	ing := &ingester{w: w, cfg: cfg, conn: conn, tracker: newTracker(cfg.MaxOpenEvents)}
	defer func() {
		_ = ing.conn.Close()
		ing.closeLoader()
	}()
	cpu0 := cpuNow()
	var wm uint64
	for _, b := range batches {
		if wm, err = ing.commit(ctx, b, wm); err != nil {
			return 0, err
		}
	}
	if ing.txn.batches > 0 {
		if _, err := ing.endOpen(ctx); err != nil {
			return 0, err
		}
	}
	return cpuNow() - cpu0, nil
}

// ReadHistoryForTest reads one attempt's stored events as the committer does to refold it.
func ReadHistoryForTest(ctx context.Context, w *Warehouse, study, run string, attempt int) ([]events.Envelope, error) {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ing := &ingester{w: w, conn: conn}
	k := attemptKey{study, run, attempt}
	hist, err := ing.readHistories(ctx, []attemptKey{k})
	if err != nil {
		return nil, err
	}
	out := make([]events.Envelope, len(hist[k]))
	for i, h := range hist[k] {
		out[i] = h.env
	}
	return out, nil
}

// ProcStatus reads a kB field of /proc/self/status in bytes.
var ProcStatus = procStatus

// ReadMalloc reads glibc's account of the C heap: held from the OS, in use, free.
var ReadMalloc = readMalloc

// ReadJemalloc reads DuckDB's allocator's account: allocated, active, resident, retained.
var ReadJemalloc = readJemalloc

// ReleaseFreeMemory returns both allocators' free pages to the OS.
var ReleaseFreeMemory = releaseFreeMemory

// Releases counts the commits after which ingestion released free memory, and those of them
// that had checkpointed the database.
func Releases() (all, checkpoints int64) { return releases.Load(), checkpointReleases.Load() }

// ReleaseEvery sets releaseEvery; it returns the previous setting.
func ReleaseEvery(d time.Duration) time.Duration {
	old := releaseEvery
	releaseEvery = d
	return old
}

// KeepFreed turns the release after commits off (true) or on; it returns the previous setting.
func KeepFreed(keep bool) bool {
	old := keepFreed
	keepFreed = keep
	return old
}

// ExistingIDsFew is existingIDsFew: the most candidate ids tested against a list instead of joined.
const ExistingIDsFew = existingIDsFew

// SetRowGroupRows makes n the row group that transactions of full batches are held open for
// (keepOpen); the returned func restores the previous value.
func SetRowGroupRows(n int) (restore func()) {
	old := rowGroupRows
	rowGroupRows = n
	return func() { rowGroupRows = old }
}

// Reattach detaches w's database and attaches it again on conn (Warehouse.reattach).
func Reattach(ctx context.Context, w *Warehouse, conn *sql.Conn) error { return w.reattach(ctx, conn) }

// EnsureAttached attaches w's database again after a reattach that could not.
func EnsureAttached(ctx context.Context, w *Warehouse, conn *sql.Conn) error {
	_, err := w.ensureAttached(ctx, conn)
	return err
}

// SetAttachWait sets how long a reattach tries to attach the database again, returning the old.
func SetAttachWait(d time.Duration) time.Duration {
	old := attachWait
	attachWait = d
	return old
}

// MaxCommitFailures is how many commit failures in a row stop Ingest.
const MaxCommitFailures = maxCommitFailures

// ExemptFromGate marks ctx as the ingester's for taking connections from w.DB(): they are not
// counted by the gate that keeps the database's users out of a reattach.
func ExemptFromGate(ctx context.Context) context.Context { return exemptFromGate(ctx) }

// ConnsOut is how many of w.DB()'s connections the gate counts out of the pool.
func ConnsOut(w *Warehouse) int { return w.gate.outOfPool() }

// CloseGate closes w's gate (as a reattach does, once no connection is out) and returns the
// func that opens it.
func CloseGate(w *Warehouse) (open func(), ok bool) {
	return w.gate.open, w.gate.tryClose(context.Background(), time.Second, false)
}

// FoldedFirstLevelBytes is the bytes of a filter's smallest first level (foldedMinKeys
// attempts).
const FoldedFirstLevelBytes = foldedMinKeys * foldedBitsPerKey / 8
