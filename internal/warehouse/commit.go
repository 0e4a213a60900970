package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sort"
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

// commit stores one batch in one transaction and acknowledges it. It returns the new
// watermark; errRestart when the batch had a gap (the caller restarts the consumer); an error
// wrapping ErrCommit when DuckDB failed (nothing is acked and the memory of open runs is reset).
func (ing *ingester) commit(ctx context.Context, b *batch, wm uint64) (uint64, error) {
	start := time.Now()
	ing.firstNo = ing.batchNo + 1
	ing.batchNo += max(b.fetched, 1)
	hooks := ing.cfg.Hooks
	if hooks != nil && hooks.AfterFetch != nil {
		for n := ing.firstNo; n <= ing.batchNo; n++ {
			if err := hooks.AfterFetch(n); err != nil {
				return wm, fmt.Errorf("%w: after fetch: %v", ErrHook, err)
			}
		}
	}

	// Partition by stream sequence: at or below the watermark is a redelivery; the run from
	// wm+1 without a hole is stored; anything past a hole waits for the consumer's restart.
	sorted := slices.Clone(b.items)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].streamSeq < sorted[j].streamSeq })
	next := wm
	var accepted []*item
	var redelivered uint64
	gap := false
	for _, it := range sorted {
		switch {
		case it.streamSeq <= next:
			redelivered++
		case it.streamSeq == next+1:
			accepted = append(accepted, it)
			next++
		default:
			if !gap && len(accepted) == 0 && ing.gapPersists(next) && ing.goneFromStream(ctx, next+1) {
				// The same hole after several consumer restarts: the message is gone from the
				// stream (deleted by an operator). Step over it.
				next = it.streamSeq - 1
				accepted = append(accepted, it)
				next++
				continue
			}
			gap = true
		}
	}

	// Each message's part: a good event (the first of its id within the batch), a duplicate
	// of one, or rejected.
	seen := make(map[string]struct{}, len(accepted))
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

	ing.current = b.built
	res, err := ing.storeRange(ctx, accepted, next)
	ing.current = nil
	if err != nil && ctx.Err() == nil && len(accepted) > 0 {
		// DuckDB refused the batch. Whatever the reason, it must not refuse it forever: store
		// it in halves, and a message it refuses even alone goes to rejected_events (see
		// isolate). A failure of the database itself fails every piece and comes back here.
		ing.forget()
		res, err = ing.isolate(ctx, accepted, err)
	}
	if err != nil {
		ing.forget()
		return wm, fmt.Errorf("%w: batch %d (stream %d..%d): %v", ErrCommit, ing.batchNo, wm+1, next, err)
	}
	ing.committed++
	if hooks != nil && hooks.AfterCommit != nil {
		for n := ing.firstNo; n <= ing.batchNo; n++ {
			if err := hooks.AfterCommit(n); err != nil {
				return next, fmt.Errorf("%w: after commit: %v", ErrHook, err)
			}
		}
	}
	var rejected []*item
	for _, it := range accepted {
		if it.rej != nil {
			rejected = append(rejected, it)
		}
	}
	if !ing.skipAck() {
		ing.ack(sorted, rejected, next)
	}
	ing.w.stats.batchDone(batchStats{
		at: time.Now(), took: time.Since(start), watermark: next, lag: b.lag, messages: len(b.items),
		events: res.stored, rejected: uint64(len(rejected)), duplicates: res.duplicates,
		redelivered: redelivered, foldErrors: res.foldErrors, folded: res.folded,
		openRuns: len(ing.tracker.open), openEvents: ing.tracker.events,
	})
	if gap {
		return next, errRestart
	}
	return next, nil
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
	var good, rejected []*item
	var dups uint64
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
	ing.maxIDKnown = false
	if conn, err := ing.w.db.Conn(context.Background()); err == nil {
		_ = ing.conn.Close()
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
// everything up to the new watermark, each by its reply subject (items keep it, not the
// client's message). A lost ack is harmless: the redelivery is at or below the watermark.
func (ing *ingester) ack(sorted, rejected []*item, wm uint64) {
	for _, it := range rejected {
		if it.reply != "" {
			_ = ing.bus.Terminate(it.reply, truncate(it.rej.reason, 200))
		}
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if it := sorted[i]; it.streamSeq <= wm && it.reply != "" {
			_ = ing.bus.Ack(it.reply)
			return
		}
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
}

func (r *storeResult) add(o storeResult) {
	r.stored += o.stored
	r.duplicates += o.duplicates
	r.folded += o.folded
	r.foldErrors += o.foldErrors
}

// store runs the batch's transaction.
// inBatchDups counts the events dropped because their id repeats within the batch.
func (ing *ingester) store(ctx context.Context, good, rejected []*item, wm uint64, inBatchDups uint64) (res storeResult, err error) {
	res.duplicates = inBatchDups
	conn := ing.conn
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()

	tr := newTrace()
	defer tr.print(len(good))
	if len(good) > 0 {
		existing, err := ing.existingIDs(ctx, good)
		tr.mark("ids")
		if err != nil {
			return res, fmt.Errorf("existing ids: %w", err)
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
	for _, it := range good {
		ing.tracker.add(it)
	}
	tr.mark("rejected")
	folded, foldErrors, err := ing.foldFinished(ctx)
	tr.mark("fold")
	if err != nil {
		return res, fmt.Errorf("fold: %w", err)
	}
	res.stored, res.folded, res.foldErrors = uint64(len(good)), uint64(len(folded)), foldErrors
	if err := setWatermark(ctx, conn, ing.cfg.Stream, wm, len(good), len(rejected), res.duplicates); err != nil {
		return res, fmt.Errorf("watermark: %w", err)
	}
	tr.mark("watermark")
	if h := ing.cfg.Hooks; h != nil && h.BeforeCommit != nil {
		for n := ing.firstNo; n <= ing.batchNo; n++ {
			if err := h.BeforeCommit(n); err != nil {
				return res, err
			}
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return res, err
	}
	tr.mark("commit")
	ing.releaseAfterCheckpoint()
	tr.mark("release")
	for _, it := range good {
		ing.maxID = max(ing.maxID, it.env.ID)
	}
	ing.tracker.endBatch(folded)
	for _, k := range folded {
		ing.folded.add(k)
	}
	return res, nil
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
			if err := loadEvents(ctx, ing.conn, br.rec); err != nil {
				return err
			}
		}
		return nil
	}
	br := buildFor(good)
	defer br.release()
	return loadEvents(ctx, ing.conn, br.rec)
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

// existingIDs returns the ids of good that are already stored.
// Only ids at or below the largest stored id can be stored already: with time-sortable ids
// that is usually none or a few of a batch, and the query is skipped.
func (ing *ingester) existingIDs(ctx context.Context, good []*item) (map[string]struct{}, error) {
	if !ing.maxIDKnown {
		if err := ing.conn.QueryRowContext(ctx, queries.IngestMaxID.SQL).Scan(&ing.maxID); err != nil {
			return nil, err
		}
		ing.maxIDKnown = true
	}
	var ids []string
	var lo, hi string
	for _, it := range good {
		id := it.env.ID
		if id > ing.maxID {
			continue
		}
		if len(ids) == 0 || id < lo {
			lo = id
		}
		hi = max(hi, id)
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := ing.conn.QueryContext(ctx, queries.IngestExistingIDs.SQL, lo, hi, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found map[string]struct{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if found == nil {
			found = map[string]struct{}{}
		}
		found[id] = struct{}{}
	}
	return found, rows.Err()
}

// foldFinished writes the run_folds rows of the attempts that finished in this batch and of
// finished attempts that received a late event. It returns the keys folded.
func (ing *ingester) foldFinished(ctx context.Context) ([]attemptKey, uint64, error) {
	t := ing.tracker
	if err := ing.folded.ensure(ctx, ing.conn); err != nil {
		return nil, 0, fmt.Errorf("folded attempts: %w", err)
	}
	var newKeys []attemptKey
	for _, a := range t.batch {
		if a.isNew && ing.folded.mayHave(a.key) {
			newKeys = append(newKeys, a.key)
		}
	}
	tr := newTrace()
	defer tr.print(len(newKeys))
	late, err := ing.foldedKeys(ctx, newKeys)
	if err != nil {
		return nil, 0, err
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
	var rows []foldRow
	var keys []attemptKey
	var foldErrors uint64
	for _, a := range fromMemory {
		keys = append(keys, a.key)
		if row, ferr := a.fold.row(a.key); row != nil {
			rows = append(rows, row)
			if ferr {
				foldErrors++
			}
		}
	}
	tr.mark("memfold")
	if len(fromDB) > 0 {
		hist, err := ing.readHistories(ctx, fromDB)
		if err != nil {
			return nil, 0, err
		}
		if err := ing.execKeys(ctx, queries.IngestFoldDelete.SQL, fromDB); err != nil {
			return nil, 0, err
		}
		for _, k := range fromDB {
			keys = append(keys, k)
			if row, ferr := foldHistory(k, hist[k]); row != nil {
				rows = append(rows, row)
				if ferr {
					foldErrors++
				}
			}
		}
	}
	tr.mark("dbfold")
	if len(rows) > 0 {
		if err := ing.appendFolds(rows); err != nil {
			return nil, 0, err
		}
	}
	tr.mark("append")
	return keys, foldErrors, nil
}

func keyLists(keys []attemptKey) (studies, runs []string, attempts []int32) {
	for _, k := range keys {
		studies = append(studies, k.study)
		runs = append(runs, k.run)
		attempts = append(attempts, int32(k.attempt))
	}
	return studies, runs, attempts
}

func (ing *ingester) execKeys(ctx context.Context, q string, keys []attemptKey) error {
	s, r, a := keyLists(keys)
	_, err := ing.conn.ExecContext(ctx, q, s, r, a)
	return err
}

// foldedKeys returns which of keys already have a run_folds row.
func (ing *ingester) foldedKeys(ctx context.Context, keys []attemptKey) (map[attemptKey]struct{}, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	s, r, a := keyLists(keys)
	rows, err := ing.conn.QueryContext(ctx, queries.IngestFoldedKeys.SQL, s, r, a)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[attemptKey]struct{}
	for rows.Next() {
		var k attemptKey
		if err := rows.Scan(&k.study, &k.run, &k.attempt); err != nil {
			return nil, err
		}
		if out == nil {
			out = map[attemptKey]struct{}{}
		}
		out[k] = struct{}{}
	}
	return out, rows.Err()
}

// readHistories reads the stored events of some attempts, sorted as the fold wants them.
// Each row's columns are the envelope's fields; its payload column, the producer's bytes, is
// decoded by events as Decode decodes a message's payload.
func (ing *ingester) readHistories(ctx context.Context, keys []attemptKey) (map[attemptKey][]histEvent, error) {
	s, r, a := keyLists(keys)
	rows, err := ing.conn.QueryContext(ctx, queries.IngestAttemptEvents.SQL, s, r, a)
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
	return out, rows.Err()
}

// appendFolds appends run_folds rows with DuckDB's appender, inside the open transaction.
func (ing *ingester) appendFolds(rows []foldRow) error {
	return ing.conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "run_folds")
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := app.AppendRow(r...); err != nil {
				_ = app.Close()
				return err
			}
		}
		return app.Close()
	})
}
