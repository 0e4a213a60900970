package warehouse

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// onSubject agrees with comparing events.SubjectOf: on each sample event's own subject, and on
// every subject made from it by cutting it short, dropping one byte, doubling one byte or
// changing one byte to another (a dot, a letter, the end of another token).
func TestOnSubject(t *testing.T) {
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		var cands []string
		for i := 0; i <= len(subj); i++ {
			cands = append(cands, subj[:i], subj[:i]+"."+subj[i:])
			if i < len(subj) {
				cands = append(cands, subj[:i]+subj[i+1:], subj[:i+1]+subj[i:], subj[:i]+"x"+subj[i+1:], subj[:i]+"."+subj[i+1:])
			}
		}
		cands = append(cands, subj+"x", "x"+subj, events.EventsPrefix+"."+e.Run+"."+e.Study+"."+string(e.Type))
		for _, c := range cands {
			if got, want := onSubject(c, &e), c == subj; got != want {
				t.Errorf("onSubject(%q) of %s/%s/%s = %v, want %v", c, e.Study, e.Run, e.Type, got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no sample event")
	}
}

// TestKeptRejectsAreNotTheirItems: a transaction keeps its rejected messages' reply subjects
// and reasons until it commits, not their items. A batch's items are in a slab that later
// batches use again once the committer is done with the batch (slabPool.recycle): an item kept
// past its batch would be overwritten by another message.
func TestKeptRejectsAreNotTheirItems(t *testing.T) {
	slab := make([]item, 3)
	rej := &rejection{class: classMalformed, reason: "not JSON"}
	slab[1] = item{streamSeq: 7, subject: "ditto.events.s.r.x", reply: "$JS.ACK.r", raw: []byte("{"), rej: rej}
	var tx txn
	tx.keepRejected(&slab[1])
	if len(tx.rejected) != 1 {
		t.Fatalf("kept %d rejects, want 1", len(tx.rejected))
	}
	got := tx.rejected[0]
	if got == &slab[1] {
		t.Fatal("the transaction keeps the rejected message's item itself (and so its slab)")
	}
	if got.reply != "$JS.ACK.r" || got.rej != rej {
		t.Errorf("kept %+v, want the reply subject and the rejection", *got)
	}
	if got.raw != nil || got.subject != "" {
		t.Errorf("kept the message's body or subject: %+v", *got)
	}
}

// TestRecycledSlabsKeepNoMessages: a batch's slab, given back once its batch is committed,
// keeps nothing of the batch's messages while it waits for the next batch, which gets it.
func TestRecycledSlabsKeepNoMessages(t *testing.T) {
	var pool slabPool
	g := newGatherer(IngestConfig{BatchSize: 4, MaxBatchBytes: 1 << 30}, new(atomic.Int64), nil, &pool)
	b := pool.batch(4)
	slab := b.slab
	g.b, g.dec = b, &chunkDecoder{}
	gone := make(chan struct{})
	func() {
		body := make([]byte, 1<<20)
		runtime.AddCleanup(&body[0], func(c chan struct{}) { close(c) }, gone)
		g.addItem(&item{subject: "ditto.events.s.r.x", raw: body}, 1)
	}()
	g.addItem(&item{raw: []byte("{}")}, 0)
	if len(b.items) != 2 || b.items[0] != &slab.items[0] || b.items[1] != &slab.items[1] {
		t.Fatalf("the batch's items are not its slab's first two: %p %p", b.items, slab.items)
	}
	g.b = nil
	pool.recycle(b)
	deadline := time.After(10 * time.Second)
	for collected := false; !collected; {
		runtime.GC()
		select {
		case <-gone:
			collected = true
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("a committed batch's message body stayed with its recycled slab")
		}
	}
	for i := range slab.items[:2] {
		if slab.items[i].raw != nil || slab.items[i].subject != "" || slab.ptrs[:2][i] != nil {
			t.Errorf("recycled slab's item %d still holds %+v", i, slab.items[i])
		}
	}
	if next := pool.batch(4); next.slab != slab || len(next.items) != 0 {
		t.Errorf("the next batch got slab %p with %d items, want the recycled %p, empty", next.slab, len(next.items), slab)
	}
	runtime.KeepAlive(slab)
}
