package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errCaughtUp ends a CatchUp session; errRestart asks for a new consumer session (a gap);
// errStalled asks for a new consumer, deleted and created again (the stall watchdog).
var (
	errCaughtUp = errors.New("warehouse: caught up")
	errRestart  = errors.New("warehouse: restart the consumer")
	errStalled  = errors.New("warehouse: consumer stalled")
)

// Ingest consumes the stream into the database until ctx is done, then returns nil. It returns
// an error only when the database fails repeatedly (ErrCommit, after several attempts with
// back-off) or a test hook stops it (ErrHook); broker errors (a restarting server, a lost
// connection) are retried with back-off for as long as it takes. Only one Ingest or
// CatchUp runs at a time per Warehouse; a second call waits for the first.
func (w *Warehouse) Ingest(ctx context.Context, b *bus.Bus, cfg IngestConfig) error {
	err := w.ingest(ctx, b, cfg, false)
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || err == nil) {
		return nil
	}
	return err
}

// CatchUp consumes the stream until every message in it when ingestion is idle is stored, then
// returns nil: the demo, the tests and Rebuild use it. It returns ctx's error if ctx ends first.
func (w *Warehouse) CatchUp(ctx context.Context, b *bus.Bus, cfg IngestConfig) error {
	err := w.ingest(ctx, b, cfg, true)
	if errors.Is(err, errCaughtUp) {
		return nil
	}
	if err == nil {
		return ctx.Err()
	}
	return err
}

func (w *Warehouse) ingest(ctx context.Context, b *bus.Bus, cfg IngestConfig, untilCaughtUp bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if w.cfg.ReadOnly {
		return ErrReadOnly
	}
	cfg = cfg.withDefaults()
	w.ingestMu.Lock()
	defer w.ingestMu.Unlock()
	w.stats.setRunning(true)
	defer w.stats.setRunning(false)

	conn, err := w.db.Conn(exemptFromGate(ctx))
	if err != nil {
		return fmt.Errorf("warehouse: connection: %w", err)
	}
	ing := &ingester{w: w, bus: b, cfg: cfg, conn: conn, tracker: newTracker(cfg.MaxOpenEvents),
		untilCaughtUp: untilCaughtUp, hold: holdSignal{wake: make(chan struct{}, 1)}}
	defer func() {
		ing.closeLoader()
		_ = ing.conn.Close()
	}()
	backoff := 100 * time.Millisecond
	commitFailures, okAtFailure := 0, -1
	for {
		err := ing.session(ctx)
		if ing.committed != okAtFailure { // progress since the last failure
			backoff, commitFailures = 100*time.Millisecond, 0
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errCaughtUp):
			return err
		case errors.Is(err, errRestart):
			w.stats.restarted()
			continue
		case errors.Is(err, errStalled):
			// Recreate the consumer from the watermark: whatever was delivered and not
			// committed is delivered again by the new one, and nothing is stored twice.
			cfg.Logger.Warn("warehouse: consumer stalled, recreating it from the watermark", "durable", cfg.Durable,
				"stream", cfg.Stream, "err", err, "consecutive", ing.stalls)
			w.stats.consumerReset()
			w.stats.restarted()
			ing.forceReset = true
			continue
		case errors.Is(err, ErrHook), errors.Is(err, ErrConfig):
			return err
		case errors.Is(err, errDetached):
			// A reattach detached the database and could not attach it again: something holds
			// the file (another process opened it in that moment) or the old database (a
			// transaction the gate does not count, on one of the ingester's own connections,
			// begun before the detach). Nothing can be written meanwhile, so
			// nothing is lost: wait for it for as long as it takes, as for the broker.
			cfg.Logger.Warn("warehouse: the database is detached and cannot be attached again yet; retrying", "db", w.cfg.Path, "err", err)
			if err := ing.renewConn(ctx); err != nil {
				return err
			}
		case errors.Is(err, ErrCommit):
			// Nothing of the batch was stored or acked; a transient failure (a write conflict
			// with another connection) heals on retry. A persistent one (disk full) stops.
			commitFailures++
			if commitFailures >= maxCommitFailures {
				return err
			}
			// A fresh connection: the failed one may be left inside its transaction.
			if err := ing.renewConn(ctx); err != nil {
				return err
			}
		case err == nil:
			continue
		}
		okAtFailure = ing.committed
		// A broker error (the server may be restarting or electing a leader) or a commit
		// failure: retry from the committed watermark after a pause.
		w.stats.restarted()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// maxCommitFailures is how many consecutive failed commits, without a successful one between
// them, make Ingest give up.
const maxCommitFailures = 5

// ingester is the state of one Ingest call.
type ingester struct {
	w             *Warehouse
	bus           *bus.Bus
	cfg           IngestConfig
	conn          *sql.Conn
	loader        *eventLoader // stores the events' records on conn (ensureLoader)
	tracker       *tracker
	folded        foldedFilter // the attempts with a run_folds row
	untilCaughtUp bool
	batchNo       int            // the last fetched batch taken by the committer
	firstNo       int            // the first fetched batch of the transaction being committed
	committed     int            // transactions committed
	txn           txn            // the transaction being committed, open across batches
	pending       pendingFolds   // the run_folds rows of the open transaction
	aloneUntil    uint64         // until the watermark reaches it, each batch is a transaction
	current       []*builtRecord // the decoder's records of the batch being stored
	maxID         string         // the largest stored event id, once maxIDKnown
	walSize       int64          // the WAL's size after the last commit (sawCheckpoint)
	releasedAt    time.Time      // releaseAfterCommit's last release, or the first commit
	sinceAttach   int64          // events committed since the database was last attached (reattach)
	reattachDue   bool           // reattach before the next transaction begins
	putOff        int            // reattaches put off in a row (reattach, gate.go)
	firmFailed    time.Time      // when a reattach that closed the gate last waited in vain
	maxIDKnown    bool
	recent        recentIDs           // the ids stored recently, started with maxID (existingIDs)
	seen          map[string]struct{} // partition's ids of a batch, kept for the next one's

	gapAt    uint64 // watermark at the last gap, to detect a gap that does not heal
	gapCount int

	forceReset bool // the next session deletes and recreates the consumer (after a stall)
	stalls     int  // consumer resets since a message was last delivered

	// delivered is when the fetcher last received a message (Unix nanoseconds; up to
	// clockEvery-1 messages late, as clockEvery says), and
	// behindSince when the watchdog first saw the stream hold messages beyond the watermark
	// with none delivered since: the watchdog measures how long data has been available and
	// not consumed, not how long ago the last batch was (which after a quiet spell is long
	// even though the consumer is healthy).
	delivered   atomic.Int64
	behindSince time.Time

	hold holdSignal // the committer waits for the next batch of an open transaction
}

// holdSignal tells the fetcher's gatherer that the committer holds a transaction open and waits
// for its next batch (keepOpen), so that the gatherer cuts that batch short when a backlog's
// stream goes quiet (gatherer.take, quiet) instead of leaving the transaction to wait
// BatchWait; a live stream's batch waits BatchWait, its pauses being no end. It is off while
// the committer stores or commits a batch. It also keeps when the committer last acknowledged
// messages: until then the broker may have been held back by MaxAckPending (while a
// transaction of TxnBatches commits, two batches beyond it fill the window), which is no quiet
// of the stream.
type holdSignal struct {
	on    atomic.Bool   // the committer waits
	acked atomic.Int64  // when the committer last acknowledged messages (Unix nanoseconds)
	wake  chan struct{} // capacity 1: the gatherer looks again at on
}

// set records whether the committer waits for the next batch of an open transaction, and wakes
// the gatherer when it now does.
func (h *holdSignal) set(on bool) {
	if h.on.Swap(on) != on && on {
		signal(h.wake)
	}
}

// batch is what the fetcher hands the committer: one fetched batch.
type batch struct {
	items []*item
	bytes int
	idle  bool           // the fetch timed out with nothing delivered
	built []*builtRecord // the batch's Arrow record
	lag   uint64         // the consumer's pending messages when its last one was delivered
	cut   string         // what ended its gathering: cutFull, cutWait or cutQuiet (the trace)
}

// What ended a batch's gathering (take).
const (
	cutFull  = "full"
	cutWait  = "wait"  // BatchWait after its first message, or after its opening for an idle one
	cutQuiet = "quiet" // the stream went quiet while the committer held a transaction for it
)

// session runs one consumer session: ensure the consumer from the committed watermark, then
// fetch and commit until an error, a gap or (CatchUp) the end of the stream.
func (ing *ingester) session(ctx context.Context) error {
	if attached, err := ing.w.ensureAttached(ctx, ing.conn); err != nil {
		return err
	} else if attached {
		ing.reattached() // the reattach that failed is done
	}
	pos, err := readPosition(ctx, ing.conn, ing.cfg.Stream)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCommit, err)
	}
	s, err := ing.bus.Stream(ctx, ing.cfg.Stream)
	if err != nil {
		return fmt.Errorf("warehouse: %w", err)
	}
	state := s.CachedInfo().State
	wm := pos.Watermark
	if state.Msgs > 0 && state.FirstSeq > wm+1 {
		// Messages below the stream's first sequence are gone (a stream created anew, or
		// limits); nothing can be stored for them.
		wm = state.FirstSeq - 1
	}
	ing.w.stats.setWatermark(wm)
	ing.w.stats.streamState(deliverableLast(state), wm)
	if ing.untilCaughtUp && state.LastSeq <= wm {
		return errCaughtUp
	}
	cons, err := ing.bus.EnsureIngestConsumer(ctx, ing.cfg.consumer(), wm, ing.forceReset)
	if err != nil {
		return fmt.Errorf("warehouse: %w", err)
	}
	ing.forceReset = false
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// fetch and decode → commit, two goroutines and a hand-over of one batch: at most three
	// batches exist at once (the one the fetcher gathers and decodes, one decoded waiting for
	// the committer, the one committed), whatever the backlog. The waiting one lets the
	// fetcher go on gathering while the committer is in a COMMIT (about 120 ms for a
	// transaction of a row group, longer than a batch takes to arrive; 60–110 ms for the
	// 40,000 events a transaction held before 2026-12-04): with an unbuffered hand-over the
	// fetcher stopped there, and the broker with it, for 20–60 ms a transaction
	// (DITTO_WAREHOUSE_TRACE's handover=), and BenchmarkIngest's rate was about a tenth lower
	// (docs/benchmarks.md). The fetcher decodes a batch in chunks while it gathers the rest, so
	// that a batch waits for the committer decoded, not raw as well as decoded. A second
	// waiting batch buys nothing while MaxAckPending stops the broker two batches beyond a
	// committing transaction, and with a window widened for it cost about 20 MiB of peak heap
	// (docs/benchmarks.md, fifteenth session).
	batches := make(chan *batch, 1)
	fetchErr := make(chan error, 1)
	ahead := pullAhead(state, ing.cfg.BatchSize)
	go func() {
		defer close(batches)
		fetchErr <- ing.fetch(sctx, cons, ahead, batches)
	}()
	drain := func(err error) error {
		ing.abandon(ctx) // an open transaction: its messages are delivered again
		cancel()
		for b := range batches {
			b.release()
		}
		// The fetcher's own error (it returns nil when sctx ends): cancel above has ended sctx
		// by now, so sctx cannot tell the two apart. Checking it here dropped every fetch error
		// (the session then ended as if nothing had failed: no restart counted, no back-off).
		if ferr := <-fetchErr; err == nil && ferr != nil {
			err = ferr
		}
		return err
	}
	// The watchdog: every tick it asks the stream for its last sequence (the lag is that minus
	// the watermark, whatever the consumer reports) and, when nothing has been delivered for
	// stallTimeout while the stream holds messages beyond the watermark, ends the session so
	// that the consumer is recreated. It runs beside the batches, not in the fetch loop, so
	// that a fetch loop polling a consumer that never delivers cannot hide a stall.
	tick := time.NewTicker(ing.checkEvery())
	defer tick.Stop()
	// wait fires when the open transaction has waited BatchWait for its next batch: it is then
	// committed with the batches it holds.
	wait := time.NewTimer(ing.cfg.BatchWait)
	defer wait.Stop()
	ing.delivered.Store(time.Now().UnixNano())
	ing.behindSince = time.Time{}
	// end commits the open transaction, if any, and advances wm.
	end := func() error {
		if ing.txn.batches == 0 {
			return nil
		}
		ing.hold.set(false)
		next, err := ing.endOpen(ctx)
		if err == nil {
			wm = next
		}
		return err
	}
	defer ing.hold.set(false)
	for {
		var waitC <-chan time.Time
		if ing.txn.batches > 0 {
			waitC = wait.C
		}
		var b *batch
		select {
		case b = <-batches:
			if b == nil {
				if ctx.Err() == nil {
					if err := end(); err != nil {
						return drain(err)
					}
				}
				return drain(nil)
			}
		case <-tick.C:
			if err := ing.checkStall(ctx, s, wm, time.Now()); err != nil {
				return drain(err) // errStalled, or a broker error
			}
			continue
		case <-waitC:
			if err := end(); err != nil {
				return drain(err)
			}
			continue
		}
		if b.idle {
			if err := end(); err != nil {
				return drain(err)
			}
			if ing.untilCaughtUp {
				last, err := lastSeq(ctx, s)
				if err != nil {
					return drain(err)
				}
				if last <= wm {
					return drain(errCaughtUp)
				}
			}
			continue
		}
		ing.stalls = 0
		lag := b.lag
		ing.hold.set(false)
		next, err := ing.commit(ctx, b, wm)
		b.release()
		if err != nil {
			return drain(err)
		}
		wm = next
		ing.hold.set(ing.txn.batches > 0)
		if ing.txn.batches > 0 {
			wait.Reset(ing.cfg.BatchWait) // open for the next batch
			continue
		}
		if ing.untilCaughtUp && lag == 0 {
			// The consumer had nothing more when the batch's last message was delivered.
			last, err := lastSeq(ctx, s)
			if err != nil {
				return drain(err)
			}
			if last <= wm {
				return drain(errCaughtUp)
			}
		}
	}
}

// checkEvery is the watchdog's period: a quarter of the stall timeout, at most a second, at
// least BatchWait.
func (ing *ingester) checkEvery() time.Duration {
	return max(min(ing.cfg.StallTimeout/4, time.Second), ing.cfg.BatchWait, time.Millisecond)
}

// checkStall records the stream's lag beyond watermark wm and returns errStalled (wrapped) when
// messages beyond wm have been available for longer than the stall timeout with nothing
// delivered meanwhile. Available-since is when a tick first saw the stream beyond wm after
// the last delivery: data that arrives after a quiet spell is not a stall just because the
// last delivery was long ago (the batch it starts is handed over BatchWait later). Each reset
// without a delivery since doubles the timeout, up to 32×, so a stream whose last messages
// cannot be delivered (deleted one by one) is not reset in a loop.
func (ing *ingester) checkStall(ctx context.Context, s *bus.Stream, wm uint64, now time.Time) error {
	timeout := ing.cfg.StallTimeout << min(ing.stalls, 5)
	delivered := time.Unix(0, ing.delivered.Load())
	if ing.behindSince.Before(delivered) {
		ing.behindSince = time.Time{} // something was delivered since the stream was seen behind
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	info, err := s.Info(ictx)
	cancel()
	if err != nil {
		// A broker busy electing a leader may fail this and still deliver: only when nothing
		// has been delivered either does it end the session (a broker error: back-off, retry).
		if now.Sub(delivered) < timeout {
			return nil
		}
		return fmt.Errorf("warehouse: stream info: %w", err)
	}
	last := deliverableLast(info.State)
	ing.w.stats.streamState(last, wm)
	if last <= wm {
		ing.behindSince = time.Time{}
		return nil
	}
	if ing.behindSince.IsZero() {
		ing.behindSince = now
	}
	waited := now.Sub(ing.behindSince)
	if waited < timeout {
		return nil
	}
	ing.stalls++
	return fmt.Errorf("%w: messages beyond the watermark for %v with nothing delivered (last delivery %v ago), stream last sequence %d, watermark %d",
		errStalled, waited.Round(time.Millisecond), now.Sub(delivered).Round(time.Millisecond), last, wm)
}

// deliverableLast is the stream's last sequence, or 0 if the stream holds no message.
func deliverableLast(state jetstream.StreamState) uint64 {
	if state.Msgs == 0 {
		return 0
	}
	return state.LastSeq
}

func lastSeq(ctx context.Context, s *bus.Stream) (uint64, error) {
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("warehouse: stream info: %w", err)
	}
	return info.State.LastSeq, nil
}

// fetch gathers delivered messages into batches bounded by count, bytes and time, decodes them
// (in chunks, as they arrive) and builds their Arrow record, and sends them to the committer.
// It holds at most one batch while the committer holds another.
//
// The client hands each message to a callback (Consume) on its subscription's goroutine, which
// adds it to the batch being gathered (gatherer.add); fetch cuts the batches and hands them
// over. Taking each message from the client's iterator instead (Messages, then Next per
// message) cost the client about 0.45 µs more an event: every Next call arms and stops a
// heartbeat timer of its own.
func (ing *ingester) fetch(ctx context.Context, cons jetstream.Consumer, ahead int, out chan<- *batch) error {
	g := newGatherer(ing.cfg, &ing.delivered, &ing.hold)
	cc, err := cons.Consume(g.add, jetstream.PullMaxMessages(ahead),
		jetstream.ConsumeErrHandler(g.fail))
	if err != nil {
		return fmt.Errorf("warehouse: pull: %w", err)
	}
	defer cc.Stop()
	defer g.close()
	stopped := cc.Closed()
	for {
		tr := newTrace()
		b, dec, err := g.take(ctx, stopped)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("warehouse: next message: %w", err)
		}
		b.idle = len(b.items) == 0
		tr.mark("fetch")
		tr.note("cut", b.cut)
		if !b.idle {
			dec.start(b.items)
			dec.wait()
			tr.mark("decode")
			b.built = []*builtRecord{buildFor(b.items)}
			tr.mark("record")
		}
		n := len(b.items) // b is the committer's once handed over
		select {
		case out <- b:
		case <-ctx.Done():
			b.release()
			return nil
		}
		tr.mark("handover")
		tr.print(n)
	}
}

// gatherer is the batch being gathered, shared by the client's callback, which adds the
// delivered messages to it, and the fetcher, which opens it and takes it when it is full or its
// time is up. Between the two the callback waits: while the fetcher decodes a batch and hands
// it over, the messages the client pulled ahead wait in the client, as they did in its iterator.
type gatherer struct {
	batchSize, maxBytes int
	wait                time.Duration // BatchWait
	delivered           *atomic.Int64 // the ingester's last delivery (Unix nanoseconds)
	hold                *holdSignal   // the committer waits for this batch in an open transaction

	mu          sync.Mutex
	b           *batch        // the batch being gathered; nil while the fetcher has none open
	dec         *chunkDecoder // b's decoder
	first       time.Time     // when b's first message was added (after any wait for b to open)
	lastPending uint64        // the consumer's pending messages when the last message was delivered
	fill        time.Duration // how long the last full batch took from its first message
	unclocked   int           // messages added since the clock was last read (clockEvery)

	// arrivals counts the messages published to the stream while b was gathered, prevArrivals
	// while the batch before it was (addItem; quiet), from the pending count of the message
	// with the largest stream sequence delivered so far (countedSeq, countedPending).
	arrivals, prevArrivals     uint64
	countedSeq, countedPending uint64

	// items is where add takes the next items from: a slab of itemSlab, so that a message costs
	// no allocation of its own (add runs on the client's one callback goroutine, so it needs no
	// lock).
	items []item

	opened chan struct{} // a batch was opened (for a callback waiting for one)
	kick   chan struct{} // b got its first message, or is full (for the fetcher)
	errs   chan error    // the first error that ends the session
	done   chan struct{} // closed when the fetcher returns: the callback adds nothing more
}

func newGatherer(cfg IngestConfig, delivered *atomic.Int64, hold *holdSignal) *gatherer {
	return &gatherer{batchSize: cfg.BatchSize, maxBytes: cfg.MaxBatchBytes, wait: cfg.BatchWait,
		delivered: delivered, hold: hold,
		opened: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		errs: make(chan error, 1), done: make(chan struct{})}
}

// quietGap is the least time the stream has to deliver nothing, after a message with nothing
// pending beyond it, for the gatherer to cut short the batch a waiting committer holds a
// transaction open for (take); quiet gives the time. At the end of a backlog the transaction
// then commits that long after the last message instead of BatchWait (1 s) after it:
// BenchmarkIngest's 20 batches, 12 and 8 to a transaction, took about 2.3 s a pass instead of
// 1.35 while the last 8 waited BatchWait (docs/benchmarks.md, fifteenth session).
const quietGap = 20 * time.Millisecond

// quiet is how long a stream that had nothing pending must deliver nothing for the batch a held
// transaction waits for to be cut short.
//
// At the end of a backlog (a stream nobody published to while this batch and the one before it
// were gathered) it is a quarter of the time the last full batch took to fill, at least quietGap,
// at most BatchWait: a batch of a backlog fills in 30–100 ms and the quiet is 20–25 ms. It
// counts from the committer's last ack at the earliest (take), not from when the committer began
// to wait, which came 10–25 ms after a backlog's last batch was opened (its storing) and cost
// BenchmarkIngest as much a pass.
//
// While messages are published to the stream (arrivals, counted from the pending counts of the
// deliveries) it is BatchWait, which no quiet outlasts: a live stream's batch is cut when it is
// full or BatchWait after its first message. A live stream's deliveries pause for longer than
// its rate says (a loaded machine, a collection, a publisher waiting for its acks, a commit
// taking the cores), and a pause mistaken for an end costs a transaction short of a row group,
// whose rows go through the WAL and are compressed again at the next checkpoint. Under the
// 20,000 events/s load, with the backlog's quiet (125 ms there, a quarter of a batch's 0.5 s),
// quiet cuts ended 9 of 52 transactions short of a row group; their rows filled the WAL, and the
// two checkpoints they made took 3.3 and 6.3 s inside a COMMIT, the run's largest lag
// (deploy/README.md, twenty-third session). With a quiet of 20 ms counted from the batch's
// opening, quiet cuts had ended 122 of 146 transactions short (fifteenth session). The end of a
// live stream commits up to BatchWait after its last message. The caller holds g.mu.
func (g *gatherer) quiet() time.Duration {
	if g.arrivals+g.prevArrivals > 0 {
		return g.wait
	}
	return min(max(quietGap, g.fill/4), g.wait)
}

// quietFrom is when the quiet of a batch opened at opened began: the latest of its opening, the
// last delivery (g.delivered; the clock is read for a batch's first message, after the batch
// was opened, so a delivery to this batch is never dated before its opening) and the
// committer's last ack (until which MaxAckPending may have held the broker back).
func (g *gatherer) quietFrom(opened time.Time) time.Time {
	from := time.Unix(0, g.hold.acked.Load())
	for _, t := range []time.Time{opened, time.Unix(0, g.delivered.Load())} {
		if t.After(from) {
			from = t
		}
	}
	return from
}

// full says whether b takes no more messages. The caller holds g.mu.
func (g *gatherer) full() bool {
	return len(g.b.items) >= g.batchSize || g.b.bytes >= g.maxBytes
}

// add is the client's callback: it adds msg to the open batch, waiting for one to be opened
// when there is none or it is full.
func (g *gatherer) add(msg jetstream.Msg) {
	it := g.itemFor(len(msg.Data()))
	pending := fillItem(it, msg)
	g.addItem(it, pending)
}

// itemFor gives a zero item for a message of size bytes: from the slab, or one of its own for
// a message over slabBody.
func (g *gatherer) itemFor(size int) *item {
	if size > slabBody {
		return new(item)
	}
	if len(g.items) == 0 {
		g.items = make([]item, itemSlab)
	}
	it := &g.items[0]
	if g.items = g.items[1:]; len(g.items) == 0 {
		g.items = nil // a slab used up is not the gatherer's to keep
	}
	return it
}

// itemSlab is how many items the gatherer allocates at once, for messages of at most slabBody
// bytes. An allocation a message (an item is some 300 bytes, most of them the decoded envelope)
// took 0.13 µs of CPU an event in BenchmarkIngest's profile of a million events, the slabs 0.06.
// A slab is kept while any of its items is, and its items keep their messages: the messages of
// a slab's batches stored before its last one, and those of the slab being filled, stay until
// then. Those are at most itemSlab messages of slabBody bytes, about 1 MiB a slab (some 300 KB
// at the usual 280 bytes); a larger message gets an item of its own, so that a stream of large
// events, whose batches MaxBatchBytes cuts to a few dozen messages, does not keep stored
// batches' bodies. No item is kept past its batch (the transaction keeps copies of its
// rejects, txn.keepRejected).
const (
	itemSlab = 256
	slabBody = 4 << 10
)

// clockEvery bounds how many messages in a row the gatherer adds without reading the clock.
// It reads it for a batch's first message and the one that fills it (BatchWait counts from the
// first, quiet from how long a batch took to fill) and for a message with nothing pending
// beyond it (the quiet after it counts from its delivery, quietFrom); of the others, a backlog's
// usual message, only every clockEvery-th: at some 55 ns a reading (time.Now) the clock was
// 0.09 µs of an event's CPU in BenchmarkIngest's profile of a million events. The watchdog's
// last delivery (ingester.delivered) is then at most clockEvery-1 messages late: microseconds at
// a backlog's pace, and a slow stream's messages mostly have nothing pending beyond them and
// read it; in any case no later than the next batch's first message, about one BatchWait,
// against a stall timeout of at least 4 BatchWaits (IngestConfig.StallTimeout).
const clockEvery = 16

// addItem adds a delivered message, with the consumer's pending count at its delivery. It wakes
// the fetcher when the batch got its first message or is full, and when the pending count fell
// to nothing (a backlog's end: a committer waiting for this batch in an open transaction then
// ends it once the stream stays quiet, take).
func (g *gatherer) addItem(it *item, pending uint64) {
	g.mu.Lock()
	for g.b == nil || g.full() {
		g.mu.Unlock()
		select {
		case <-g.opened:
		case <-g.done:
			return
		}
		g.mu.Lock()
	}
	// close empties g.b under g.mu before it closes done, so an open batch here is not closed.
	b := g.b
	first := len(b.items) == 0
	if first {
		b.items = make([]*item, 0, g.batchSize)
	}
	b.items = append(b.items, it)
	b.bytes += len(it.raw)
	b.lag = pending
	drained := pending == 0 && g.lastPending != 0
	if seq := it.streamSeq; seq > g.countedSeq {
		// A message's first delivery takes one off the consumer's pending count; a count that
		// fell by less, or rose, counts the messages published since the last first delivery.
		// A redelivery (a sequence delivered before) leaves the count as it was, and is not
		// counted; nor is a message without a stream sequence.
		if g.countedSeq > 0 && pending+1 > g.countedPending {
			g.arrivals += pending + 1 - g.countedPending
		}
		g.countedSeq, g.countedPending = seq, pending
	}
	g.lastPending = pending
	full := g.full()
	if g.unclocked++; first || full || pending == 0 || g.unclocked >= clockEvery {
		g.unclocked = 0
		now := time.Now()
		g.delivered.Store(now.UnixNano())
		if first {
			g.first = now
		}
		if full {
			g.fill = now.Sub(g.first)
		}
	}
	if len(b.items)-g.dec.from >= decodeChunk {
		g.dec.start(b.items)
	}
	kick := first || full || drained
	g.mu.Unlock()
	if kick {
		signal(g.kick)
	}
}

// fail is the client's error callback. The errors after which the iterator of messages this
// replaces ended the session end it here too: missed heartbeats (a lost connection the client
// has not noticed), a deleted consumer, a refused pull, a closed connection. So does a pull
// nobody answers (no responders): the consumer is gone, as it is after the broker restarted,
// since it keeps its state in the broker's memory (bus.IngestConsumerConfig); the next session
// makes it again from the watermark at once, where the missed heartbeats came 30 s later. The
// others (a request that expired, a new consumer leader) the client handles itself by pulling
// again.
func (g *gatherer) fail(_ jetstream.ConsumeContext, err error) {
	switch {
	case errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, jetstream.ErrConsumerDeleted),
		errors.Is(err, jetstream.ErrBadRequest), errors.Is(err, jetstream.ErrConnectionClosed),
		errors.Is(err, nats.ErrNoResponders):
		select {
		case g.errs <- err:
		default:
		}
	}
}

// take opens a batch and returns it, with its decoder, once it is full, or BatchWait after its
// first message, or (an idle batch) BatchWait after it was opened with nothing delivered. While
// the committer waits for it in an open transaction, it also returns it, partial or empty, once
// the stream has gone quiet: nothing delivered for quiet() since the batch was opened, its last
// message (which had nothing pending beyond it) or the committer last acknowledged messages,
// whichever came last. It returns an error when ctx is done, the client reported an error that ends the
// session, or the client stopped (stopped closed).
func (g *gatherer) take(ctx context.Context, stopped <-chan struct{}) (*batch, *chunkDecoder, error) {
	opened := time.Now()
	g.mu.Lock()
	g.b, g.dec = &batch{}, &chunkDecoder{}
	g.prevArrivals, g.arrivals = g.arrivals, 0
	g.mu.Unlock()
	signal(g.opened)
	deadline := opened.Add(g.wait)
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	started := false
	for {
		now := time.Now()
		g.mu.Lock()
		b, dec := g.b, g.dec
		if !started && len(b.items) > 0 {
			started, deadline = true, g.first.Add(g.wait)
		}
		full := g.full()
		cut, next := full || !now.Before(deadline), deadline
		why := cutWait
		if full {
			why = cutFull
		}
		if !cut && g.hold.on.Load() && g.lastPending == 0 {
			quietAt := g.quietFrom(opened).Add(g.quiet())
			cut, why = !now.Before(quietAt), cutQuiet
			if quietAt.Before(next) {
				next = quietAt
			}
		}
		if cut {
			b.cut = why
			g.b, g.dec = nil, nil
			g.mu.Unlock()
			return b, dec, nil
		}
		g.mu.Unlock()
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case err := <-g.errs:
			return nil, nil, err
		case <-stopped:
			// The client reports the error that ends its consuming (a deleted consumer, say)
			// to fail before it stops, so that error is waiting in errs when stopped is
			// closed; select picks either when both are ready, and the error says more.
			select {
			case err := <-g.errs:
				return nil, nil, err
			default:
			}
			return nil, nil, errors.New("the client stopped consuming")
		case <-g.kick:
		case <-g.hold.wake:
		case <-timer.C:
		}
	}
}

// close ends the gathering when the fetcher returns: the callback adds nothing more and one
// waiting for a batch returns. It waits for the decoding of the batch left open.
func (g *gatherer) close() {
	g.mu.Lock()
	dec := g.dec
	g.b, g.dec = nil, nil
	g.mu.Unlock()
	close(g.done)
	if dec != nil {
		dec.wait()
	}
}

// signal wakes whoever waits on c (of capacity 1), or leaves a wake-up there.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// decodeChunk is how many delivered messages the fetcher gathers before it decodes them
// (beside the gathering of the next ones, on another core).
const decodeChunk = 1_000

// chunkDecoder decodes a batch's items in chunks, each in a goroutine of its own, while the
// fetcher gathers the rest of the batch.
type chunkDecoder struct {
	wg   sync.WaitGroup
	from int // the items before it are decoded or being decoded
}

// start decodes items[d.from:].
func (d *chunkDecoder) start(items []*item) {
	part := items[d.from:]
	d.from = len(items)
	if len(part) == 0 {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for _, it := range part {
			decodeItem(it)
		}
	}()
}

// wait returns when every chunk started is decoded.
func (d *chunkDecoder) wait() { d.wg.Wait() }

// pullAheadBytes is about how many bytes of messages the client fetches ahead of the batch
// being gathered (pullAhead makes it a count). Its buffer has to cover a pull's round trip and
// what the broker delivers while the callback waits, the fetcher handing a batch over (the
// decoding of its last chunk and its record: 5–15 ms an idle 10,000-event batch, some 600 to
// 2,000 messages at the rate a backlog is delivered). At 2,000 messages it did not, and the
// broker stopped there: BenchmarkIngest's ratio to the reference rose from a median of 0.535
// to 0.584–0.607 at 5,000 and 10,000 messages (docs/benchmarks.md, eighth session). A whole
// batch of messages (before it was 2,000) held a fourth batch beside the three in the
// pipeline however large the events; the count from bytes holds about 3 MiB of messages of
// the stream's mean size (more when the messages ahead are larger than the mean). The client
// holds a message in about 2.8 times its stored size (its Msg, the header map, the subject and
// reply strings): 4 MiB were some 11 MB of the heap. With transactions of a DuckDB row group
// (DefaultTxnBatches) the broker is no longer held back by MaxAckPending while a transaction
// commits, so the client's buffer fills: BenchmarkIngest's peak heap growth was 62-78 MiB
// (median 70.5) at 4 MiB, 55-61 at 2 and 58-60 at 3 (docs/benchmarks.md, fourteenth session).
const pullAheadBytes = 3 << 20

// pullAhead is the count of messages the client pulls ahead (its PullMaxMessages):
// pullAheadBytes in the stream's mean stored message (1 KiB for an empty stream), at most a
// batch and at least 16. A count, not the client's byte bound (PullMaxBytes): a byte bound
// below the largest message the stream holds stalls the consumer at that message for good, and
// a stream need not have been made with ditto's MaxMsgSize (an operator's, an older one).
func pullAhead(state jetstream.StreamState, batch int) int {
	mean := uint64(1 << 10)
	if state.Msgs > 0 && state.Bytes > 0 {
		mean = max(state.Bytes/state.Msgs, 1)
	}
	return max(min(batch, int(pullAheadBytes/mean)), 16)
}

// fillItem keeps in it (a zero item) what the committer needs of a delivered message: its
// subject, reply subject, body and Nats-Msg-Id. The client's message itself (its parsed
// headers, a map, and the client's state: about three times the 280 bytes of a typical body) is
// let go at once; the committer acknowledges and terminates by reply subject (bus.Ack,
// bus.Terminate), as the message's own methods do. It returns the consumer's pending count
// (the lag).
func fillItem(it *item, msg jetstream.Msg) (pending uint64) {
	it.subject, it.reply, it.raw = msg.Subject(), msg.Reply(), msg.Data()
	if d, err := bus.DeliveryOf(msg); err == nil {
		it.streamSeq, pending = d.StreamSeq, d.Pending
	}
	if h := msg.Headers(); h != nil {
		it.msgID = h.Get(jetstream.MsgIDHeader)
	}
	return pending
}

// decodeBatch decodes a batch on every core and builds its Arrow record, as the fetcher does
// (for the benchmarks and tests that build batches without a broker).
func decodeBatch(b *batch) {
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(b.items) + workers - 1) / workers
	var wg sync.WaitGroup
	for start := 0; start < len(b.items); start += chunk {
		part := b.items[start:min(start+chunk, len(b.items))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, it := range part {
				decodeItem(it)
			}
		}()
	}
	wg.Wait()
	b.built = []*builtRecord{buildFor(b.items)}
}

func (b *batch) release() {
	for _, r := range b.built {
		r.release()
	}
	b.built = nil
}
