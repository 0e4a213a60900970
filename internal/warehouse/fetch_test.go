package warehouse

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/samples"
	"github.com/nats-io/nats.go/jetstream"
)

// publishSample publishes the sample's events to a new server's stream and returns the bus and
// the sizes of the published bodies, in stream order.
func publishSample(t *testing.T) (*bus.Bus, []int) {
	t.Helper()
	b := bustest.NewServer(t).Connect(t)
	js := bustest.JetStream(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sizes []int
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		subject, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, subject, line, jetstream.WithMsgID(e.ID)); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(line))
	}
	return b, sizes
}

// fetchBatches runs the fetcher on a new consumer of b's events from the start with cfg and
// returns its batches until every one of n messages is in one (the idle batches left out),
// then stops it. It fails the test if the fetcher returns first.
func fetchBatches(t *testing.T, b *bus.Bus, cfg IngestConfig, n int) []*batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: "fetch-test", AckWait: time.Minute}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	ing := &ingester{cfg: cfg.withDefaults()}
	fctx, stop := context.WithCancel(ctx)
	out := make(chan *batch)
	errc := make(chan error, 1)
	go func() { errc <- ing.fetch(fctx, cons, pullAhead(jetstream.StreamState{}, ing.cfg.BatchSize), out) }()
	var got []*batch
	for seen := 0; seen < n; {
		select {
		case bt := <-out:
			if bt.idle {
				continue
			}
			got = append(got, bt)
			seen += len(bt.items)
		case err := <-errc:
			t.Fatalf("fetch returned %v with %d of %d messages fetched", err, seen, n)
		case <-ctx.Done():
			t.Fatalf("%d of %d messages fetched before the deadline", seen, n)
		}
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("fetch after its context ended: %v", err)
	}
	for _, bt := range got {
		bt.release()
	}
	return got
}

// TestFetchBatchBounds shows the fetcher's batches in stream order, every message once, each
// decoded, and cut by count (BatchSize), by bytes (a batch ends with the message that reaches
// MaxBatchBytes) and by time (the last, short batch is handed over after BatchWait).
func TestFetchBatchBounds(t *testing.T) {
	b, sizes := publishSample(t)
	n := len(sizes)
	check := func(t *testing.T, got []*batch, full func(count, bytes int) bool) {
		t.Helper()
		seq := uint64(0)
		for i, bt := range got {
			count, size := 0, 0
			for _, it := range bt.items {
				seq++
				if it.streamSeq != seq {
					t.Fatalf("batch %d: stream sequence %d, want %d", i, it.streamSeq, seq)
				}
				if it.reply == "" || it.msgID == "" {
					t.Fatalf("batch %d, sequence %d: reply %q, Nats-Msg-Id %q; want both", i, seq, it.reply, it.msgID)
				}
				if it.rej == nil && it.env.ID != it.msgID {
					t.Fatalf("batch %d, sequence %d: decoded event %q, want %q", i, seq, it.env.ID, it.msgID)
				}
				if count > 0 && full(count, size) {
					t.Fatalf("batch %d holds a message after it was full (%d messages, %d bytes)", i, count, size)
				}
				count, size = count+1, size+len(it.raw)
			}
			if size != bt.bytes {
				t.Fatalf("batch %d: bytes %d, want %d", i, bt.bytes, size)
			}
			if last := i == len(got)-1; !last && !full(count, size) {
				t.Fatalf("batch %d of %d cut before it was full (%d messages, %d bytes)", i, len(got), count, size)
			}
		}
		if seq != uint64(n) {
			t.Fatalf("fetched %d messages, want %d", seq, n)
		}
	}
	t.Run("count", func(t *testing.T) {
		const size = 7
		got := fetchBatches(t, b, IngestConfig{BatchSize: size, BatchWait: time.Second}, n)
		check(t, got, func(count, _ int) bool { return count >= size })
		if n%size != 0 && len(got[len(got)-1].items) != n%size {
			t.Fatalf("last batch %d messages, want %d", len(got[len(got)-1].items), n%size)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		limit := 3 * sizes[0]
		got := fetchBatches(t, b, IngestConfig{BatchSize: 1000, MaxBatchBytes: limit, BatchWait: time.Second}, n)
		check(t, got, func(_, bytes int) bool { return bytes >= limit })
		if len(got) < 2 {
			t.Fatalf("%d batches, want the bytes to cut several", len(got))
		}
	})
}

// TestFetchNoticesDeletedConsumer: the fetcher returns the client's error when its consumer is
// deleted, instead of waiting for messages that cannot come.
func TestFetchNoticesDeletedConsumer(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: "fetch-test", AckWait: time.Minute}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	ing := &ingester{cfg: IngestConfig{BatchWait: 20 * time.Millisecond}.withDefaults()}
	out := make(chan *batch)
	errc := make(chan error, 1)
	go func() { errc <- ing.fetch(ctx, cons, pullAhead(jetstream.StreamState{}, ing.cfg.BatchSize), out) }()
	// An idle batch first: the client's pull is waiting on the server.
	select {
	case bt := <-out:
		if !bt.idle {
			t.Fatalf("a batch of %d messages from an empty stream", len(bt.items))
		}
	case err := <-errc:
		t.Fatalf("fetch returned %v", err)
	}
	if err := b.DeleteConsumer(ctx, events.EventsStream, "fetch-test"); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-out: // idle batches until the client hears of the deletion
		case err := <-errc:
			if !errors.Is(err, jetstream.ErrConsumerDeleted) {
				t.Fatalf("fetch returned %v, want the consumer's deletion", err)
			}
			return
		case <-ctx.Done():
			t.Fatal("fetch did not notice its consumer's deletion")
		}
	}
}

// testGatherer is a gatherer with cfg's defaults and BatchWait wait, and its holdSignal.
func testGatherer(wait time.Duration) (*gatherer, *holdSignal) {
	hold := &holdSignal{wake: make(chan struct{}, 1)}
	return newGatherer(IngestConfig{BatchWait: wait}.withDefaults(), new(atomic.Int64), hold), hold
}

// taken is what take returned, and when.
type taken struct {
	b   *batch
	at  time.Time
	err error
}

// startTake runs g.take in a goroutine and returns where its result comes.
func startTake(ctx context.Context, g *gatherer) <-chan taken {
	got := make(chan taken, 1)
	go func() {
		b, _, err := g.take(ctx, nil)
		got <- taken{b, time.Now(), err}
	}()
	return got
}

// TestQuietCountsFromTheLastAck: the batch a held transaction waits for is cut short only after
// quiet() with nothing delivered since the committer last acknowledged messages, however long
// the batch was open before (while a transaction commits, MaxAckPending holds the broker back),
// and quiet() is a quarter of the last full batch's filling time, at least quietGap. Before, a
// batch opened during a COMMIT was cut as soon as the committer waited: under load most
// transactions ended short of a row group.
func TestQuietCountsFromTheLastAck(t *testing.T) {
	for _, fill := range []time.Duration{0, 800 * time.Millisecond} {
		t.Run(fill.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, hold := testGatherer(time.Hour)
			g.fill = fill
			got := startTake(ctx, g)
			// The batch is open, nothing is delivered, and the committer is committing.
			time.Sleep(100 * time.Millisecond)
			select {
			case tk := <-got:
				t.Fatalf("take returned (%v) with no committer waiting and BatchWait an hour", tk.err)
			default:
			}
			// The COMMIT ends: its ack releases the broker, and the committer waits.
			ackedAt := time.Now()
			hold.acked.Store(ackedAt.UnixNano())
			hold.set(true)
			tk := <-got
			if tk.err != nil || tk.b == nil || len(tk.b.items) != 0 {
				t.Fatalf("take: %+v, want an empty batch", tk)
			}
			want := max(quietGap, fill/4)
			if d := tk.at.Sub(ackedAt); d < want {
				t.Errorf("the batch was cut %v after the ack, want at least %v", d, want)
			}
		})
	}
}

// TestQuietFromAndQuiet: the quiet of a batch begins at the latest of its opening, its last
// delivery and the committer's last ack, and lasts a quarter of the last full batch's filling
// time, at least quietGap and at most BatchWait.
func TestQuietFromAndQuiet(t *testing.T) {
	g, hold := testGatherer(time.Second)
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct{ opened, delivered, acked, want int }{
		{opened: 0, delivered: -50, acked: -100, want: 0},  // opened last
		{opened: 0, delivered: 30, acked: 10, want: 30},    // a delivery since
		{opened: 0, delivered: -50, acked: 120, want: 120}, // a COMMIT acked after the opening
	} {
		g.delivered.Store(at(c.delivered).UnixNano())
		hold.acked.Store(at(c.acked).UnixNano())
		if got := g.quietFrom(at(c.opened)); !got.Equal(at(c.want)) {
			t.Errorf("opened %d ms, last delivery %d ms, ack %d ms: the quiet begins at %v ms, want %d",
				c.opened, c.delivered, c.acked, got.Sub(base).Milliseconds(), c.want)
		}
	}
	for _, c := range []struct{ fill, want time.Duration }{
		{0, quietGap}, {40 * time.Millisecond, quietGap}, {500 * time.Millisecond, 125 * time.Millisecond}, {10 * time.Second, time.Second},
	} {
		g.fill = c.fill
		if got := g.quiet(); got != c.want {
			t.Errorf("last full batch filled in %v: quiet %v, want %v", c.fill, got, c.want)
		}
	}
	// Messages published while this batch or the one before it was gathered: a live stream,
	// whose pauses are no end.
	g.fill = 500 * time.Millisecond
	for _, a := range [][2]uint64{{1, 0}, {0, 1}, {40, 7}} {
		g.arrivals, g.prevArrivals = a[0], a[1]
		if got := g.quiet(); got != g.wait {
			t.Errorf("%d messages published during this batch, %d during the one before: quiet %v, want BatchWait (%v)",
				a[0], a[1], got, g.wait)
		}
	}
}

// TestLiveStreamPauseIsNoQuiet: messages come, the committer then waits for the batch in an
// open transaction, and the stream pauses. When nothing was published while the batch was
// gathered (a backlog: each first delivery's pending count one less than the last), the pause
// is the stream's end and the batch is cut once the stream stays quiet. When the pending counts
// say messages were published meanwhile (a live stream), the pause is not an end and the batch
// is cut BatchWait after its first message. A redelivery, which leaves the pending count as it
// was, is no arrival. Before, a live stream's pauses of 125 ms cut 9 of 52 transactions short
// of a row group under the 20,000 events/s load, and their rows made the checkpoints that took
// 3.3 and 6.3 s.
func TestLiveStreamPauseIsNoQuiet(t *testing.T) {
	const wait = time.Second
	type delivery struct{ seq, pending uint64 }
	for _, c := range []struct {
		name       string
		deliveries []delivery
		want       string
	}{
		{"backlog", []delivery{{1, 3}, {2, 2}, {3, 1}, {4, 0}}, cutQuiet},
		{"backlog, redelivered", []delivery{{1, 3}, {2, 2}, {1, 2}, {2, 2}, {3, 1}, {4, 0}}, cutQuiet},
		{"live", []delivery{{1, 0}, {2, 0}, {3, 0}, {4, 0}}, cutWait},
		{"live, catching up", []delivery{{1, 5}, {2, 5}, {3, 5}, {4, 0}}, cutWait},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, hold := testGatherer(wait)
			got := startTake(ctx, g)
			for !func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.b != nil }() {
				time.Sleep(time.Millisecond) // until take has opened the batch
			}
			first := time.Now()
			for _, d := range c.deliveries {
				g.addItem(&item{raw: []byte("{}"), streamSeq: d.seq}, d.pending)
			}
			hold.set(true) // the committer has stored the last batch and waits for this one
			tk := <-got
			if tk.err != nil {
				t.Fatalf("take: %v", tk.err)
			}
			if tk.b.cut != c.want || len(tk.b.items) != len(c.deliveries) {
				t.Fatalf("deliveries %v: the batch of %d messages was cut by %q after %v, want %d cut by %q",
					c.deliveries, len(tk.b.items), tk.b.cut, tk.at.Sub(first), len(c.deliveries), c.want)
			}
			if d := tk.at.Sub(first); c.want == cutWait && d < wait {
				t.Errorf("cut %v after its first message, before BatchWait (%v)", d, wait)
			} else if c.want == cutQuiet && d >= wait {
				t.Errorf("cut %v after its first message, not before BatchWait (%v)", d, wait)
			}
		})
	}
}

// TestQuietAfterBacklogEndsMidBatch: a committer waits in an open transaction while a backlog's
// last messages fill part of the batch; the message with nothing pending beyond it wakes the
// fetcher, which cuts the batch once the stream stays quiet, not BatchWait (an hour here) after
// its first message. Before, take looked again only at a batch's first message or when it was
// full, and slept past the quiet.
func TestQuietAfterBacklogEndsMidBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, hold := testGatherer(time.Hour)
	hold.set(true)
	got := startTake(ctx, g)
	for !func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.b != nil }() {
		time.Sleep(time.Millisecond) // until take has opened the batch
	}
	g.addItem(&item{raw: []byte("{}")}, 3) // more pending: the backlog goes on
	time.Sleep(50 * time.Millisecond)      // take looks at it and sleeps
	g.addItem(&item{raw: []byte("{}")}, 0) // the backlog's last message
	tk := <-got
	if tk.err != nil {
		t.Fatalf("take: %v (the batch was not cut when the stream went quiet)", tk.err)
	}
	if len(tk.b.items) != 2 {
		t.Errorf("the batch holds %d messages, want 2", len(tk.b.items))
	}
}

// TestDeliveredReadsTheClockWhenItMatters: the gatherer reads the clock for a message with
// nothing pending beyond it (the quiet after a backlog counts from it, quietFrom), for a batch's
// first message, and at least every clockEvery messages (the watchdog's last delivery), but not
// for every message.
func TestDeliveredReadsTheClockWhenItMatters(t *testing.T) {
	g, _ := testGatherer(time.Hour)
	g.b, g.dec = &batch{}, &chunkDecoder{}
	before := time.Now()
	g.addItem(&item{raw: []byte("{}")}, 5) // the batch's first
	if got := time.Unix(0, g.delivered.Load()); got.Before(before) {
		t.Fatalf("first message: last delivery %v, before it was added (%v)", got, before)
	}
	time.Sleep(5 * time.Millisecond)
	mid := time.Now()
	for i := 0; i < clockEvery-1; i++ {
		g.addItem(&item{raw: []byte("{}")}, 4)
	}
	if got := time.Unix(0, g.delivered.Load()); !got.Before(mid) {
		t.Errorf("the clock was read for a message with more pending (last delivery %v, after %v)", got, mid)
	}
	g.addItem(&item{raw: []byte("{}")}, 4) // the clockEvery-th since the clock was read
	if got := time.Unix(0, g.delivered.Load()); got.Before(mid) {
		t.Errorf("%d messages without reading the clock: last delivery %v, before %v", clockEvery, got, mid)
	}
	time.Sleep(5 * time.Millisecond)
	last := time.Now()
	g.addItem(&item{raw: []byte("{}")}, 0) // nothing pending beyond it
	if got := time.Unix(0, g.delivered.Load()); got.Before(last) {
		t.Errorf("a message with nothing pending: last delivery %v, before it was added (%v)", got, last)
	}

	// The message that fills a batch reads the clock too, for how long the batch took to fill
	// (g.fill, from which quiet is reckoned), whatever is pending beyond it.
	g.batchSize = len(g.b.items) + 2
	g.addItem(&item{raw: []byte("{}")}, 4)
	if g.fill != 0 {
		t.Fatalf("a batch not yet full: fill %v, want none yet", g.fill)
	}
	g.addItem(&item{raw: []byte("{}")}, 4) // fills it, with more pending and the clock lately read
	if want := last.Sub(g.first); g.fill < want {
		t.Errorf("the message that filled the batch: fill %v, want at least %v (from its first message)", g.fill, want)
	}
}

// TestTakeReportsTheClientsError: when the client has reported the error that ends its
// consuming (to fail) and stopped, take returns that error, not "the client stopped consuming":
// the client reports it before it stops, so both are ready at once, and select chose either
// (TestFetchNoticesDeletedConsumer failed so once under the race detector in CI).
func TestTakeReportsTheClientsError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	close(stopped)
	for i := 0; i < 32; i++ {
		g, _ := testGatherer(time.Hour)
		g.fail(nil, jetstream.ErrConsumerDeleted)
		if _, _, err := g.take(ctx, stopped); !errors.Is(err, jetstream.ErrConsumerDeleted) {
			t.Fatalf("take %d: %v, want the consumer's deletion", i, err)
		}
	}
}
