package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/queries"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/nats-io/nats.go/jetstream"
)

// builtRecord is an Arrow record batch and the items it holds.
type builtRecord struct {
	rec   arrow.RecordBatch
	items []*item
}

func buildFor(items []*item) *builtRecord {
	good := make([]*item, 0, len(items))
	for _, it := range items {
		if it.rej == nil {
			good = append(good, it)
		}
	}
	return &builtRecord{rec: buildRecord(recordAllocator, good), items: good}
}

func (r *builtRecord) release() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

// txn is the DuckDB transaction the committer holds open across fetched batches. While batches
// fill before BatchWait (keepOpen) the committer stores the next batch in the same transaction,
// up to TxnBatches of them, instead of committing each batch alone: a transaction costs DuckDB
// a large fixed part whatever its size (the COMMIT, the run_folds rows' appender and their 50
// columns, the watermark). Each batch's messages and
// Arrow record go once it is stored (its run_folds rows wait in ing.pending): the open
// transaction keeps what its COMMIT and acknowledgement need, the watermark, the counters, the
// rejected messages to terminate and the reply subject whose ack acknowledges the rest (AckAll).
// So when it fails, the messages of its batches are delivered again rather than stored again
// from memory (failed).
type txn struct {
	open     bool // BEGIN ran, and neither COMMIT nor ROLLBACK since
	batches  int  // fetched batches stored in it
	start    time.Time
	wm, next uint64 // the committed watermark when it began; the one it sets
	maxSeq   uint64 // the largest stream sequence delivered in it, stored or not
	// last holds the accepted messages of the batch being stored while commit runs, when the
	// transaction ends with that batch (held): a failure of a transaction of that one batch
	// stores them again in pieces (isolate).
	last     []*item
	held     bool
	rejected []*item // terminated once committed
	ack      string  // the reply subject of the message whose ack acknowledges the rest
	res      storeResult
	messages int
	redeliv  uint64
	lag      uint64
	gap      bool // the last batch had a hole: commit up to it and restart the consumer
}

// commit stores batch b in the open transaction, beginning one if none is open, and commits
// and acknowledges the transaction unless it stays open for the next batch (keepOpen). It
// returns the committed watermark (wm while the transaction stays open); errRestart when the
// batch had a gap (the caller restarts the consumer), or when a transaction of several batches
// failed (their messages, let go, are delivered again and stored one batch a transaction);
// an error wrapping ErrCommit when DuckDB failed (nothing is acked and the memory of open runs
// is reset).
func (ing *ingester) commit(ctx context.Context, b *batch, wm uint64) (uint64, error) {
	t := &ing.txn
	if t.batches == 0 {
		if ing.reattachDue {
			// Before the batch is looked at: when the reattach fails, nothing of it is taken,
			// and the session starts again from wm (ErrCommit), attaching the database first.
			if err := ing.reattach(ctx); err != nil {
				return wm, err
			}
		}
		*t = txn{start: time.Now(), wm: wm, next: wm}
		ing.firstNo = ing.batchNo + 1
	}
	ing.batchNo++
	if hooks := ing.cfg.Hooks; hooks != nil && hooks.AfterFetch != nil {
		if err := hooks.AfterFetch(ing.batchNo); err != nil {
			return wm, fmt.Errorf("%w: after fetch: %v", ErrHook, err)
		}
	}
	accepted := ing.partition(ctx, b)
	t.batches++
	t.last, t.held = accepted, true
	ing.current = b.built
	err := ing.storeBatch(ctx, accepted)
	ing.current = nil
	b.release() // the record is in DuckDB's transaction now
	if err == nil {
		if !t.gap && ing.keepOpen(b) {
			t.last, t.held = nil, false // the batch's messages go
			if err = ing.flushFolds(ctx); err == nil {
				return wm, nil
			}
		} else {
			err = ing.end(ctx)
		}
	}
	if err != nil {
		if err = ing.failed(ctx, err); err != nil {
			return wm, err
		}
	}
	return ing.done()
}

// endOpen commits and acknowledges the open transaction, its last batch already stored: no
// next batch came within BatchWait, the next was idle, or the fetcher stopped.
func (ing *ingester) endOpen(ctx context.Context) (uint64, error) {
	wm := ing.txn.wm
	if err := ing.end(ctx); err != nil {
		if err = ing.failed(ctx, err); err != nil {
			return wm, err
		}
	}
	return ing.done()
}

// partition takes b's messages into the transaction by stream sequence: at or below the
// transaction's watermark is a redelivery; the run from it without a hole is accepted (and
// advances it); anything past a hole waits for the consumer's restart (t.gap). Of the accepted
// messages, an event whose id repeats within the batch is a duplicate (it.dup); one repeated
// from an earlier batch of the transaction is found by the duplicate-id probe, which sees the
// transaction's own rows.
func (ing *ingester) partition(ctx context.Context, b *batch) []*item {
	t := &ing.txn
	sorted := b.items
	bySeq := func(a, b *item) int { return cmp.Compare(a.streamSeq, b.streamSeq) }
	if !slices.IsSortedFunc(sorted, bySeq) { // a batch comes in stream order but after a redelivery
		sorted = slices.Clone(sorted)
		slices.SortStableFunc(sorted, bySeq)
	}
	next := t.next
	accepted := make([]*item, 0, len(sorted))
	for _, it := range sorted {
		t.maxSeq = max(t.maxSeq, it.streamSeq)
		switch {
		case it.streamSeq <= next:
			t.redeliv++
		case it.streamSeq == next+1:
			accepted = append(accepted, it)
			next++
		default:
			if !t.gap && len(accepted) == 0 && ing.gapPersists(next) && ing.goneFromStream(ctx, next+1) {
				// The same hole after several consumer restarts: the message is gone from the
				// stream (deleted by an operator). Step over it.
				next = it.streamSeq - 1
				accepted = append(accepted, it)
				next++
				continue
			}
			t.gap = true
		}
	}
	// The ack: cumulative, by the last message at or below the new watermark.
	for i := len(sorted) - 1; i >= 0; i-- {
		if it := sorted[i]; it.streamSeq <= next && it.reply != "" {
			t.ack = it.reply
			break
		}
	}
	t.next = next
	t.messages += len(b.items)
	t.lag = b.lag

	if ing.seen == nil {
		ing.seen = make(map[string]struct{}, len(accepted))
	}
	seen := ing.seen
	defer clear(seen)
	for _, it := range accepted {
		it.dup = false
		if it.rej != nil {
			continue
		}
		if _, dup := seen[it.env.ID]; dup {
			it.dup = true
			continue
		}
		seen[it.env.ID] = struct{}{}
	}
	return accepted
}

// keepOpen reports whether the transaction waits for the next batch after b: while it holds
// fewer than TxnBatches batches and b filled (by count or bytes) before BatchWait, with a
// backlog or at a rate that fills a batch within BatchWait, and while the broker may deliver a
// next batch beside the messages the transaction holds unacknowledged (MaxAckPending). A batch
// cut by BatchWait commits as soon as it is stored, so latency at low rates is what it was; at a
// high rate a transaction of TxnBatches full batches is a DuckDB row group (RowGroupRows), which
// DuckDB writes once instead of through the WAL (under the 20,000 events/s load the analyzer
// spent 18.3 µs of CPU an event against 23.4; deploy/README.md, fourteenth session), and its
// events become visible up to TxnBatches × BatchSize events later (about 6 s at 20,000 events/s).
// Until 2026-12-04 it also needed messages pending beyond b (a backlog): under a steady 20,000
// events/s most transactions were then one batch, through the WAL. After a failed transaction
// of several batches its messages are stored one batch a transaction until the watermark passes
// them (aloneUntil).
//
// Without a backlog it holds the transaction only when TxnBatches full batches make exactly a
// row group: with other settings (--batch-size 2000, say) a held transaction would cost the
// latency and not reach one.
func (ing *ingester) keepOpen(b *batch) bool {
	t := &ing.txn
	full := len(b.items) >= ing.cfg.BatchSize || b.bytes >= ing.cfg.MaxBatchBytes
	rowGroup := ing.cfg.BatchSize*ing.cfg.TxnBatches == rowGroupRows
	return t.batches < ing.cfg.TxnBatches && full && (b.lag > 0 || rowGroup) && t.wm >= ing.aloneUntil &&
		t.messages+ing.cfg.BatchSize <= ing.cfg.MaxAckPending
}

// rowGroupRows is RowGroupRows, a variable for TestFullBatchesKeepTransactionOpenWithoutBacklog.
var rowGroupRows = RowGroupRows

// storeBatch stores the accepted messages of one batch in the open transaction (it begins one
// if none is open). Their part of the fold (the tracker) is taken; the run_folds rows are
// written when the transaction ends.
func (ing *ingester) storeBatch(ctx context.Context, accepted []*item) error {
	t := &ing.txn
	if !t.open {
		if err := ing.ensureLoader(); err != nil {
			return err
		}
		if _, err := ing.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return err
		}
		t.open = true
		ing.pending.reset()
	}
	good, rejected, dups := sortItems(accepted)
	t.keepRejected(rejected...)
	res, err := ing.load(ctx, good, rejected, dups)
	if err == nil {
		err = ing.fold(ctx, &res)
	}
	t.res.add(res)
	return err
}

// keepRejected keeps what terminating the rejected messages once the transaction commits takes
// (their reply subjects and reasons; ack), not their items: the gatherer allocates items in
// slabs (itemSlab), and one item kept past its batch would keep every message of its slab.
func (t *txn) keepRejected(rejected ...*item) {
	for _, it := range rejected {
		t.rejected = append(t.rejected, &item{reply: it.reply, rej: it.rej})
	}
}

// end ends the open transaction: the run_folds rows of the attempts finished in it, the
// watermark, COMMIT.
func (ing *ingester) end(ctx context.Context) error {
	t := &ing.txn
	if err := ing.finish(ctx, t.next, &t.res, len(t.rejected)); err != nil {
		return err // the caller rolls back
	}
	t.open = false
	return nil
}

// failed handles a transaction that failed with err: it rolls back and forgets what memory
// holds of it. A transaction of one batch whose messages are held is stored again in pieces
// (isolate), which returns nil when every message is stored or rejected; any other, whose
// batches' messages are let go, ends the consumer session (errRestart) so that the broker
// delivers them again, to be stored one batch a transaction until the watermark passes them.
func (ing *ingester) failed(ctx context.Context, err error) error {
	t := &ing.txn
	ing.rollback(ctx)
	ing.forget()
	if (t.batches > 1 || !t.held) && ctx.Err() == nil {
		ing.aloneUntil = t.maxSeq
		n := t.batches
		*t = txn{}
		return fmt.Errorf("%w: a transaction of batches %d..%d failed, storing them again one batch a transaction: %v",
			errRestart, ing.batchNo-n+1, ing.batchNo, err)
	}
	accepted := t.last
	if ctx.Err() == nil && len(accepted) > 0 {
		// DuckDB refused the batch. Whatever the reason, it must not refuse it forever: store
		// it in halves, and a message it refuses even alone goes to rejected_events (see
		// isolate). A failure of the database itself fails every piece and comes back here.
		var res storeResult
		if res, err = ing.isolate(ctx, accepted, err); err == nil {
			t.res = res
			t.rejected = t.rejected[:0]
			for _, it := range accepted {
				if it.rej != nil {
					t.keepRejected(it)
				}
			}
			return nil
		}
		ing.forget()
	}
	wm, next := t.wm, t.next
	*t = txn{}
	return fmt.Errorf("%w: batch %d (stream %d..%d): %v", ErrCommit, ing.batchNo, wm+1, next, err)
}

// rollback rolls back the open transaction, if any.
func (ing *ingester) rollback(ctx context.Context) {
	if ing.txn.open {
		_, _ = ing.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		ing.txn.open = false
	}
}

// abandon rolls back the open transaction, if any, and forgets what memory holds of it (the
// session ends: its messages are delivered again to the next).
func (ing *ingester) abandon(ctx context.Context) {
	if ing.txn.batches == 0 {
		return
	}
	ing.rollback(ctx)
	ing.forget()
	ing.txn = txn{}
}

// done follows a committed transaction: the AfterCommit hooks, the acks and terminations, the
// statistics. It returns the new watermark, and errRestart after a gap.
func (ing *ingester) done() (uint64, error) {
	t := &ing.txn
	tx := *t
	*t = txn{}
	ing.committed++
	if traceOn {
		fmt.Fprintf(os.Stderr, "warehouse: transaction of %d batches, %d messages, %v\n", tx.batches, tx.messages, time.Since(tx.start).Round(time.Millisecond))
	}
	if hooks := ing.cfg.Hooks; hooks != nil && hooks.AfterCommit != nil {
		for n := ing.firstNo; n <= ing.batchNo; n++ {
			if err := hooks.AfterCommit(n); err != nil {
				return tx.next, fmt.Errorf("%w: after commit: %v", ErrHook, err)
			}
		}
	}
	if !ing.skipAck() {
		ing.ack(tx.ack, tx.rejected)
	}
	ing.w.stats.batchDone(batchStats{
		at: time.Now(), took: time.Since(tx.start), watermark: tx.next, lag: tx.lag, messages: tx.messages,
		events: tx.res.stored, rejected: uint64(len(tx.rejected)), duplicates: tx.res.duplicates,
		idLookups: tx.res.idLookups, redelivered: tx.redeliv, foldErrors: tx.res.foldErrors, folded: tx.res.folded,
		openRuns: len(ing.tracker.open), openEvents: ing.tracker.events,
	})
	if tx.gap {
		return tx.next, errRestart
	}
	return tx.next, nil
}

// skipAck asks the SkipAck hook about each batch of the transaction.
func (ing *ingester) skipAck() bool {
	h := ing.cfg.Hooks
	if h == nil || h.SkipAck == nil {
		return false
	}
	skip := false
	for n := ing.firstNo; n <= ing.batchNo; n++ {
		skip = h.SkipAck(n) || skip
	}
	return skip
}

// storeRange stores items, a run of consecutive stream sequences, in one transaction, and
// sets the watermark to wm.
func (ing *ingester) storeRange(ctx context.Context, items []*item, wm uint64) (storeResult, error) {
	good, rejected, dups := sortItems(items)
	return ing.store(ctx, good, rejected, wm, dups)
}

// isolate stores items after DuckDB refused them in one transaction (cause): in halves, each
// half again in halves if refused, down to single messages. A message refused alone is tried
// once more (a transient failure heals), then kept in rejected_events with DuckDB's reason
// (class unstorable) and terminated like any other rejected message: one message DuckDB
// cannot store must not stop ingestion for good, which it did (a subject or a Nats-Msg-Id
// that is not UTF-8 made DuckDB refuse every retry of the batch and the analyzer exit). Only
// when even the rejected_events row of a single message is refused, or DuckDB refuses the
// single message for want of memory, is the failure the database's, and ErrCommit stops
// ingestion as before. Each piece commits with the watermark
// at its last message, so a crash midway loses nothing and stores nothing twice.
func (ing *ingester) isolate(ctx context.Context, items []*item, cause error) (storeResult, error) {
	if len(items) == 1 {
		return ing.storeAlone(ctx, items[0], cause)
	}
	half := len(items) / 2
	var total storeResult
	for _, piece := range [][]*item{items[:half], items[half:]} {
		res, err := ing.storeRange(ctx, piece, piece[len(piece)-1].streamSeq)
		if err != nil {
			if ctx.Err() != nil {
				return total, err
			}
			ing.forget()
			if res, err = ing.isolate(ctx, piece, err); err != nil {
				return total, err
			}
		}
		total.add(res)
	}
	return total, nil
}

// storeAlone stores one message that DuckDB refused within a larger transaction or alone
// (cause), as described at isolate.
func (ing *ingester) storeAlone(ctx context.Context, it *item, cause error) (storeResult, error) {
	seq := it.streamSeq
	res, err := ing.storeRange(ctx, []*item{it}, seq)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	ing.forget()
	if it.rej != nil {
		// Already a rejected_events row, and DuckDB refused even that: the database fails.
		return res, err
	}
	if outOfMemory(err) {
		// DuckDB ran out of memory (its memory limit, or the machine's): the database's
		// failure, not the message's. The message stays unstored and unacknowledged and
		// ingestion retries from the watermark after a pause (ErrCommit), when a checkpoint or
		// the other transactions have let their memory go; a good event must never become an
		// unstorable reject because the database was short of memory at that moment.
		return res, err
	}
	it.subject = it.subjectOf()
	ing.cfg.Logger.Warn("warehouse: DuckDB refuses one message; keeping it in rejected_events",
		"stream_seq", seq, "subject", printable(it.subject), "err", err)
	it.rej = &rejection{class: classUnstorable, reason: printable(fmt.Sprintf(
		"warehouse: DuckDB refused to store the event (%v; in its batch: %v)", err, cause))}
	res, err = ing.storeRange(ctx, []*item{it}, seq)
	if err != nil {
		ing.forget()
	}
	return res, err
}

// outOfMemory reports whether err is DuckDB's out-of-memory error.
func outOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}

// forget drops what the ingester remembers of stored state after a failed transaction: the
// open runs' events (some may not be stored) and the largest stored id. The connection is
// replaced too: the failed one may be left inside its transaction.
func (ing *ingester) forget() {
	ing.tracker.reset()
	ing.pending.reset()
	ing.maxIDKnown = false
	ing.recent.reset()
	if conn, err := ing.w.db.Conn(exemptFromGate(context.Background())); err == nil {
		discard(ing.conn)
		ing.conn = conn
	}
}

// goneFromStream reports whether the stream no longer holds the message at seq.
func (ing *ingester) goneFromStream(ctx context.Context, seq uint64) bool {
	s, err := ing.bus.Stream(ctx, ing.cfg.Stream)
	if err != nil {
		return false
	}
	_, err = s.Msg(ctx, seq)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// gapPersists counts the consumer restarts caused by a hole just above watermark wm.
func (ing *ingester) gapPersists(wm uint64) bool {
	if ing.gapAt != wm {
		ing.gapAt, ing.gapCount = wm, 0
	}
	ing.gapCount++
	return ing.gapCount > 3
}

// ack terminates the rejected messages (with their reason) and acknowledges, cumulatively,
// everything up to the new watermark by the reply subject of the last message at or below it
// (items keep it, not the client's message). A lost ack is harmless: the redelivery is at or
// below the watermark.
func (ing *ingester) ack(reply string, rejected []*item) {
	for _, it := range rejected {
		if it.reply != "" {
			_ = ing.bus.Terminate(it.reply, truncate(it.rej.reason, 200))
		}
	}
	if reply != "" {
		_ = ing.bus.Ack(reply)
		ing.hold.acked.Store(time.Now().UnixNano())
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

type storeResult struct {
	stored, duplicates, folded, foldErrors uint64
	idLookups                              uint64 // existingIDs' queries
}

func (r *storeResult) add(o storeResult) {
	r.stored += o.stored
	r.duplicates += o.duplicates
	r.folded += o.folded
	r.foldErrors += o.foldErrors
	r.idLookups += o.idLookups
}

// store stores good events and rejected messages in one transaction of their own that sets
// the watermark to wm (isolate's pieces). inBatchDups counts the events dropped because their
// id repeats within the batch.
func (ing *ingester) store(ctx context.Context, good, rejected []*item, wm uint64, inBatchDups uint64) (res storeResult, err error) {
	conn := ing.conn
	if err := ing.ensureLoader(); err != nil {
		return res, err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	ing.pending.reset()
	if res, err = ing.load(ctx, good, rejected, inBatchDups); err != nil {
		return res, err
	}
	if err = ing.fold(ctx, &res); err != nil {
		return res, err
	}
	err = ing.finish(ctx, wm, &res, len(rejected))
	return res, err
}

// load stores good events (those not stored already) and rejected messages in the open
// transaction and takes the events into the open runs' folds.
func (ing *ingester) load(ctx context.Context, good, rejected []*item, inBatchDups uint64) (res storeResult, err error) {
	res.duplicates = inBatchDups
	conn := ing.conn
	tr := newTrace()
	defer tr.print(len(good))
	if len(good) > 0 {
		existing, looked, err := ing.existingIDs(ctx, good)
		tr.mark("ids")
		if err != nil {
			return res, fmt.Errorf("existing ids: %w", err)
		}
		if looked {
			res.idLookups++
		}
		if len(existing) > 0 {
			kept := good[:0:0]
			for _, it := range good {
				if _, ok := existing[it.env.ID]; !ok {
					kept = append(kept, it)
				}
			}
			res.duplicates += uint64(len(good) - len(kept))
			good = kept
		}
	}
	if len(good) > 0 {
		if err := ing.loadGood(ctx, good); err != nil {
			return res, fmt.Errorf("events: %w", err)
		}
		tr.mark("load")
	}
	for _, it := range rejected {
		var msgID any
		if it.msgID != "" {
			msgID = printable(it.msgID)
		}
		raw := it.raw
		if raw == nil {
			raw = []byte{} // an empty body; nil would be NULL
		}
		// VARCHAR columns take only UTF-8; a message's subject and headers may be any bytes
		// (its raw bytes are kept whole, as a BLOB).
		if _, err := conn.ExecContext(ctx, queries.IngestRejected.SQL, int64(it.streamSeq), printable(it.subject), msgID,
			raw, printable(it.rej.reason), it.rej.class); err != nil {
			return res, fmt.Errorf("rejected: %w", err)
		}
	}
	tr.mark("rejected")
	for _, it := range good {
		ing.tracker.add(it)
		// The transaction's own rows: the duplicate-id probe of its next batch sees them. A
		// failed transaction forgets the largest id and the recent ids (forget).
		ing.maxID = max(ing.maxID, it.env.ID)
		ing.recent.stored(it.env.ID, ing.maxID)
	}
	res.stored = uint64(len(good))
	return res, nil
}

// finish ends the open transaction: the run_folds rows of the attempts finished in it, the
// watermark wm and the counters (res, rejected), the BeforeCommit hooks, COMMIT. The caller rolls
// back when it fails.
func (ing *ingester) finish(ctx context.Context, wm uint64, res *storeResult, rejected int) error {
	tr := newTrace()
	defer tr.print(int(res.stored))
	if err := ing.appendPending(ctx); err != nil {
		return err
	}
	tr.mark("append")
	if err := setWatermark(ctx, ing.conn, ing.cfg.Stream, wm, int(res.stored), rejected, res.duplicates); err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	tr.mark("watermark")
	if h := ing.cfg.Hooks; h != nil && h.BeforeCommit != nil {
		for n := ing.firstNo; n <= ing.batchNo; n++ {
			if err := h.BeforeCommit(n); err != nil {
				return err
			}
		}
	}
	if _, err := ing.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	tr.mark("commit")
	checkpointed := ing.sawCheckpoint()
	ing.sinceAttach += int64(res.stored)
	if checkpointed && ing.cfg.ReattachEvents > 0 && ing.sinceAttach >= ing.cfg.ReattachEvents {
		ing.reattachDue = true // before the next transaction begins (commit)
	}
	ing.releaseAfterCommit(checkpointed)
	tr.mark("release")
	return nil
}

// fold folds, in the open transaction, the attempts that finished in the batch just loaded and
// the finished attempts that received a late event (foldFinished), and adds their count to res.
// Their run_folds rows wait in ing.pending for the transaction's end; the tracker lets their
// state go now, so that a transaction of several batches holds no more fold state than one.
func (ing *ingester) fold(ctx context.Context, res *storeResult) error {
	folded, foldErrors, err := ing.foldFinished(ctx)
	if err != nil {
		return fmt.Errorf("fold: %w", err)
	}
	res.folded += uint64(len(folded))
	res.foldErrors += foldErrors
	ing.tracker.endBatch(folded)
	for _, k := range folded {
		// Before COMMIT: if the transaction fails, the filter holds attempts without a row, which
		// costs a query (a false positive) and nothing else.
		ing.folded.add(k)
	}
	return nil
}

// ensureLoader gives the ingester's connection its event loader, before a transaction begins
// (the loader registers its view outside one). A replaced connection gets a new loader; the old
// one's stream is released, its connection being closed.
func (ing *ingester) ensureLoader() error {
	if ing.loader != nil && ing.loader.conn == ing.conn {
		return nil
	}
	ing.closeLoader()
	l, err := newEventLoader(ing.conn)
	if err != nil {
		return err
	}
	ing.loader = l
	return nil
}

// closeLoader releases the event loader's stream, if any.
func (ing *ingester) closeLoader() {
	if ing.loader != nil {
		ing.loader.close()
		ing.loader = nil
	}
}

// setWatermark advances stream's watermark to wm and adds to its counters, inside the open
// transaction: an UPDATE of its row, or the row's INSERT when the stream has none yet.
func setWatermark(ctx context.Context, conn *sql.Conn, stream string, wm uint64, stored, rejected int, dups uint64) error {
	args := []any{stream, int64(wm), int64(stored), int64(rejected), int64(dups)}
	res, err := conn.ExecContext(ctx, queries.IngestWatermarkSet.SQL, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	_, err = conn.ExecContext(ctx, queries.IngestWatermarkInsert.SQL, args...)
	return err
}

// loadGood loads the good events, reusing the records the decoder built when they hold
// exactly these items, in order (the usual case: no redelivery, no duplicate, no hole).
func (ing *ingester) loadGood(ctx context.Context, good []*item) error {
	// The decoder's records are only usable when they hold the same items; compare identities.
	if sameItems(ing.current, good) {
		for _, br := range ing.current {
			if br.rec.NumRows() == 0 {
				continue
			}
			if err := ing.loader.load(ctx, br.rec); err != nil {
				return err
			}
		}
		return nil
	}
	br := buildFor(good)
	defer br.release()
	return ing.loader.load(ctx, br.rec)
}

// sameItems reports whether the records hold exactly items, in order.
func sameItems(recs []*builtRecord, items []*item) bool {
	if len(recs) == 0 {
		return false
	}
	i := 0
	for _, br := range recs {
		if br.rec == nil || i+len(br.items) > len(items) {
			return false
		}
		for _, it := range br.items {
			if it != items[i] {
				return false
			}
			i++
		}
	}
	return i == len(items)
}

// existingIDsFew is the most candidates existingIDs tests against the list, row by row in their
// id range (ingest_existing_ids_few); more are joined (ingest_existing_ids). Each join builds a
// hash table whose blocks' handles DuckDB's buffer manager keeps for good: 4.6–6.0 KB of C heap
// a call against 0.2–0.3 KB for the list (BenchmarkExistingIDs); the list costs its length a row
// of the range, hence the small bound. A batch of a trickle of events (a few a batch, as
// production traces and studies usually arrive) leaves a twentieth of that. The batches of
// thousands with ids just below the largest stored one (the load generator's events carry times
// ahead of their publishing) are answered by the window of recent ids (recentIDs) and not
// looked up at all; only ids older than the window are still joined (deploy/README.md, "A join
// a batch" and "A window of recent ids").
const existingIDsFew = 64

// existingIDs returns the ids of good that are already stored.
// Only ids at or below the largest stored id can be stored already: with time-sortable ids
// that is usually none or a few of a batch. Of those, the ones in the window of recently stored
// ids (recentIDs) whose hash it does not hold are not stored either. The query runs for the
// rest, if any: the ids older than the window, and the window's "perhaps" (real duplicates,
// mostly).
// looked is whether it queried DuckDB for them.
func (ing *ingester) existingIDs(ctx context.Context, good []*item) (found map[string]struct{}, looked bool, err error) {
	if !ing.maxIDKnown {
		if err := ing.conn.QueryRowContext(ctx, queries.IngestMaxID.SQL).Scan(&ing.maxID); err != nil {
			return nil, false, err
		}
		ing.maxIDKnown = true
	}
	var ids []string
	var lo, hi string
	for _, it := range good {
		id := it.env.ID
		if id > ing.maxID || ing.recent.notStored(id) {
			continue
		}
		if len(ids) == 0 || id < lo {
			lo = id
		}
		hi = max(hi, id)
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, false, nil
	}
	if !ing.recent.known {
		// Ids arrive out of order: keep the window from now on (the ids of this batch and the
		// next ones). A stream in order never needs it, and never pays its memory.
		ing.recent.start(ing.maxID)
	}
	q := queries.IngestExistingIDs
	if len(ids) <= existingIDsFew {
		q = queries.IngestExistingIDsFew
	}
	rows, err := ing.conn.QueryContext(ctx, q.SQL, lo, hi, ids)
	if err != nil {
		return nil, true, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, true, err
		}
		if found == nil {
			found = map[string]struct{}{}
		}
		found[id] = struct{}{}
	}
	return found, true, rows.Err()
}

// foldFinished folds the attempts that finished in this batch and the finished attempts that
// received a late event into run_folds rows, kept in ing.pending until the transaction ends. It
// returns the keys folded. A late event of an attempt folded earlier in the same transaction
// (its row pending, not in run_folds yet) refolds it from the events stored, as one of an
// attempt folded by an earlier transaction does.
func (ing *ingester) foldFinished(ctx context.Context) ([]attemptKey, uint64, error) {
	t := ing.tracker
	if err := ing.ensureFolded(ctx); err != nil {
		return nil, 0, fmt.Errorf("folded attempts: %w", err)
	}
	var newKeys, pendingKeys []attemptKey
	for _, a := range t.batch {
		switch {
		case !a.isNew:
		case ing.pending.has(a.key):
			pendingKeys = append(pendingKeys, a.key)
		case ing.folded.mayHave(a.key):
			newKeys = append(newKeys, a.key)
		}
	}
	tr := newTrace()
	defer tr.print(len(newKeys))
	late, err := ing.foldedKeys(ctx, newKeys)
	if err != nil {
		return nil, 0, err
	}
	if len(pendingKeys) > 0 && late == nil {
		late = map[attemptKey]struct{}{}
	}
	for _, k := range pendingKeys {
		late[k] = struct{}{}
	}
	tr.mark("foldedkeys")
	var fromMemory []*openAttempt
	var fromDB []attemptKey
	for _, a := range t.batch {
		_, isLate := late[a.key]
		if !a.finished && !isLate {
			continue
		}
		if !isLate && a.complete() {
			fromMemory = append(fromMemory, a)
		} else {
			fromDB = append(fromDB, a.key)
		}
	}
	var keys []attemptKey
	var foldErrors uint64
	for _, a := range fromMemory {
		keys = append(keys, a.key)
		row, ferr := a.fold.row(a.key)
		ing.pending.put(a.key, row)
		if row != nil && ferr {
			foldErrors++
		}
	}
	tr.mark("memfold")
	if len(fromDB) > 0 {
		hist, err := ing.readHistories(ctx, fromDB)
		if err != nil {
			return nil, 0, err
		}
		if err := ing.deleteFolds(ctx, fromDB); err != nil {
			return nil, 0, err
		}
		for _, k := range fromDB {
			keys = append(keys, k)
			row, ferr := foldHistory(k, hist[k])
			ing.pending.put(k, row)
			if row != nil && ferr {
				foldErrors++
			}
		}
	}
	tr.mark("dbfold")
	return keys, foldErrors, nil
}

// ensureFolded loads the filter of folded attempts when it must (foldedFilter.ensure) and then
// adds the attempts whose rows the open transaction still holds (ing.pending): the load reads
// run_folds, which has not got them yet, and an attempt left out would never be refolded by a
// late event. Transactions of a row group hold them for up to 12 batches.
func (ing *ingester) ensureFolded(ctx context.Context) error {
	reloaded, err := ing.folded.ensure(ctx, ing.conn)
	if err != nil || !reloaded {
		return err
	}
	for k := range ing.pending.at {
		ing.folded.add(k)
	}
	return nil
}

// foldFlushRows bounds the run_folds rows an open transaction keeps in memory: beyond it they
// are appended at once, in the transaction, and the rest when it ends. A transaction of a
// backlog holds a DuckDB row group of events (DefaultTxnBatches); all of its rows kept to the
// end were 9-10 MB of the live heap at BenchmarkIngest's peak (its heap profile), 1-4 MB when
// appended by this bound (docs/benchmarks.md, fourteenth session). At 2,048 rows (about what a
// transaction of 40,000 events of runs of 20 events folded) they were still 3.3 of the 28 MB
// live at the peak; at 1,024 (about every third batch of a backlog) the peak heap growth's
// median fell from 58.7 to 53.3 MiB, the CPU an event the same within the noise, for 4
// appends a transaction of a backlog instead of 3 (twenty-ninth session). A late event of an
// attempt whose row is appended already refolds it from the events stored, as one of an
// attempt folded by an earlier transaction does (ing.folded holds it from its fold on).
var foldFlushRows = 1024 // a variable for TestLateEventInOpenTransaction

// flushFolds appends the open transaction's pending run_folds rows when they are
// foldFlushRows or more.
func (ing *ingester) flushFolds(ctx context.Context) error {
	if len(ing.pending.rows) < foldFlushRows {
		return nil
	}
	return ing.appendPending(ctx)
}

// appendPending appends the open transaction's pending run_folds rows, if any.
func (ing *ingester) appendPending(ctx context.Context) error {
	if rows := ing.pending.take(); len(rows) > 0 {
		if err := ing.appendFolds(ctx, rows); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
	}
	return nil
}

// pendingFolds are the run_folds rows of the open transaction, appended with one appender
// when it ends or when they are foldFlushRows: DuckDB's append of a wide row costs per column
// and per flush as well as per row.
type pendingFolds struct {
	rows []*foldRow         // nil where a later fold of the attempt gave no row
	at   map[attemptKey]int // the index of each attempt's row in rows
}

// put sets the attempt's row (nil: none), replacing one it folded earlier in the transaction.
func (p *pendingFolds) put(k attemptKey, row *foldRow) {
	if i, ok := p.at[k]; ok {
		p.rows[i] = row
		return
	}
	if p.at == nil {
		p.at = map[attemptKey]int{}
	}
	p.at[k] = len(p.rows)
	p.rows = append(p.rows, row)
}

func (p *pendingFolds) has(k attemptKey) bool {
	_, ok := p.at[k]
	return ok
}

// take returns the rows, in the order the attempts were first folded, and empties p.
func (p *pendingFolds) take() []*foldRow {
	rows := slices.DeleteFunc(p.rows, func(r *foldRow) bool { return r == nil })
	p.rows = nil
	clear(p.at)
	return rows
}

func (p *pendingFolds) reset() {
	p.rows = nil
	clear(p.at)
}

func keyLists(keys []attemptKey) (studies, runs []string, attempts []int32) {
	for _, k := range keys {
		studies = append(studies, k.study)
		runs = append(runs, k.run)
		attempts = append(attempts, int32(k.attempt))
	}
	return studies, runs, attempts
}

// attemptListFew is the most attempts whose events (readHistories) or run_folds rows
// (deleteFolds) are found by testing each row of their runs' range against lists of them
// (ingest_attempt_events_few, ingest_fold_delete_few); more are joined (ingest_attempt_events,
// ingest_fold_delete). A join of the attempts' strings left 2-9 KB a call (of 10 to 64
// attempts) in DuckDB 1.5.6's heap for good, as the join of ingest_folded_keys did (which no
// reattach gave back); the lists 0.05 KB or less once warm (TestAttemptListsLeaveNoMemory).
// They cost their length a row of the range, hence the bound: on 2 million events, 10
// attempts took about the join's time and 64 twice it (24-27 against 9-12 ms) when their runs'
// range spanned the table (a study's run ids do not sort by time), and 10-40% less than the
// join when it was narrow. The few attempts of a batch's late events, a trickle's in
// production, take the lists; the many that finish in a restart's first batches (every
// attempt open at the restart has its history in DuckDB only) take the join.
const attemptListFew = 64

// fewLists are the arguments of the lists' statements: the attempts' runs, the attempts as
// "study.run.attempt" (study and run are subject tokens, without dots), the smallest run and
// the largest.
func fewLists(keys []attemptKey) (runs, dotted []string, lo, hi string) {
	for _, k := range keys {
		runs = append(runs, k.run)
		dotted = append(dotted, k.study+"."+k.run+"."+strconv.Itoa(k.attempt))
		if lo == "" || k.run < lo {
			lo = k.run
		}
		hi = max(hi, k.run)
	}
	return runs, dotted, lo, hi
}

// attemptStatement returns the statement of few (its lists' form) with its arguments for up to
// attemptListFew keys, and the statement of join (three parallel lists) with its for more.
func attemptStatement(keys []attemptKey, few, join queries.Statement) (string, []any) {
	if len(keys) <= attemptListFew {
		runs, dotted, lo, hi := fewLists(keys)
		return few.SQL, []any{runs, dotted, lo, hi}
	}
	s, r, a := keyLists(keys)
	return join.SQL, []any{s, r, a}
}

// deleteFolds deletes the run_folds rows of keys.
func (ing *ingester) deleteFolds(ctx context.Context, keys []attemptKey) error {
	q, args := attemptStatement(keys, queries.IngestFoldDeleteFew, queries.IngestFoldDelete)
	_, err := ing.conn.ExecContext(ctx, q, args...)
	return err
}

// foldedKeys returns which of keys already have a run_folds row. It asks DuckDB one attempt at a
// time (ingest_folded_key): a join of all of them, one query a batch, left 220-260 bytes an
// attempt in DuckDB's heap at every query for good (docs/benchmarks.md, thirty-fifth session;
// TestFoldedKeysLeaveNoMemory). The attempts asked about are those the filter of folded
// attempts may hold, a few a batch.
func (ing *ingester) foldedKeys(ctx context.Context, keys []attemptKey) (map[attemptKey]struct{}, error) {
	var out map[attemptKey]struct{}
	for _, k := range keys {
		rows, err := ing.conn.QueryContext(ctx, queries.IngestFoldedKey.SQL, k.study, k.run, int32(k.attempt))
		if err != nil {
			return nil, err
		}
		found := rows.Next()
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
		if found {
			if out == nil {
				out = map[attemptKey]struct{}{}
			}
			out[k] = struct{}{}
		}
	}
	return out, nil
}

// readHistories reads the stored events of some attempts, sorted as the fold wants them (by
// seq, then stream sequence). Each row's columns are the envelope's fields; its payload
// column, the producer's bytes, is decoded by events as Decode decodes a message's payload.
func (ing *ingester) readHistories(ctx context.Context, keys []attemptKey) (map[attemptKey][]histEvent, error) {
	q, args := attemptStatement(keys, queries.IngestAttemptEventsFew, queries.IngestAttemptEvents)
	rows, err := ing.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[attemptKey][]histEvent{}
	var payload sql.RawBytes // decoded at once: the envelope keeps no reference to it
	for rows.Next() {
		var e events.Envelope
		var streamSeq int64
		var traceID, spanID sql.NullString
		if err := rows.Scan(&e.Study, &e.Run, &e.Attempt, &e.Seq, &streamSeq, &e.ID, &e.Type, &e.Schema, &e.Time,
			&e.Source.Kind, &e.Source.ID, &traceID, &spanID, &e.Ignorable, &payload); err != nil {
			return nil, err
		}
		e.Time, e.TraceID, e.SpanID = e.Time.UTC(), traceID.String, spanID.String
		if err := e.DecodePayload(payload); err != nil {
			// Stored events decoded when they arrived; a failure here means a newer schema.
			return nil, fmt.Errorf("stored event %s: %w", e.ID, err)
		}
		k := attemptKey{e.Study, e.Run, e.Attempt}
		out[k] = append(out[k], histEvent{env: e, streamSeq: uint64(streamSeq)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, h := range out {
		slices.SortFunc(h, func(a, b histEvent) int {
			return cmp.Or(cmp.Compare(a.env.Seq, b.env.Seq), cmp.Compare(a.streamSeq, b.streamSeq))
		})
	}
	return out, nil
}

// appendFolds stores run_folds rows (in the table run_fold_rows) inside the open transaction,
// through the connection's event loader, which the transaction's first batch ensured.
func (ing *ingester) appendFolds(ctx context.Context, rows []*foldRow) error {
	if ing.loader == nil || ing.loader.conn != ing.conn {
		return errors.New("no event loader on the transaction's connection")
	}
	return ing.loader.loadFolds(ctx, rows)
}

// sortItems splits items into the ones to store, the rejected ones and a count of the
// duplicates (good events whose id an earlier message of the batch has), keeping their order.
// When every item is to be stored, the usual batch, good is items itself (capped, so that an
// append to it does not write into items' array).
func sortItems(items []*item) (good, rejected []*item, dups uint64) {
	if !slices.ContainsFunc(items, func(it *item) bool { return it.rej != nil || it.dup }) {
		return items[:len(items):len(items)], nil, 0
	}
	good = make([]*item, 0, len(items))
	for _, it := range items {
		switch {
		case it.rej != nil:
			rejected = append(rejected, it)
		case it.dup:
			dups++
		default:
			good = append(good, it)
		}
	}
	return good, rejected, dups
}
