package warehouse

import (
	"bytes"
	"runtime"
	"testing"
	"time"
	"unsafe"

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
// and reasons until it commits, not their items. The gatherer allocates items in slabs
// (itemSlab), so one item kept past its batch would keep every message of its slab: a stream
// with one bad event in a few hundred would keep a whole transaction's messages.
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

// TestLargeMessagesAreNotKeptBySlabs: a message over slabBody bytes gets an item of its own, so
// its body goes once its batch does, though the slab it would have been taken from is still in
// use. Were it in the slab, every large message of a stream of them would stay until the slab's
// last item was let go.
func TestLargeMessagesAreNotKeptBySlabs(t *testing.T) {
	g := newGatherer(IngestConfig{BatchSize: 10, MaxBatchBytes: 1 << 20}, nil, nil)
	small := g.itemFor(280)
	gone := make(chan struct{})
	func() {
		big := g.itemFor(slabBody + 1)
		big.raw = make([]byte, slabBody+1)
		runtime.AddCleanup(&big.raw[0], func(c chan struct{}) { close(c) }, gone)
	}()
	after := g.itemFor(280)
	deadline := time.After(10 * time.Second)
	for collected := false; !collected; {
		runtime.GC()
		select {
		case <-gone:
			collected = true
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("a large message's body stayed while its slab was in use")
		}
	}
	if small == after || len(g.items) != itemSlab-2 {
		t.Errorf("the small messages took %d items of the slab, want 2", itemSlab-len(g.items))
	}
	runtime.KeepAlive(small)
	runtime.KeepAlive(after)
}

// TestDecodedItemsLetTheClientStringsGo: a good event's item keeps neither the subject string
// the client allocated for its message nor the header block its Nats-Msg-Id was cut from; it
// shares the event's id, and gives the subject back from the event (subjectOf). A message id
// that is not the event's, and a reject's subject, are kept as delivered.
func TestDecodedItemsLetTheClientStringsGo(t *testing.T) {
	sl := sampleLines(t)[0]
	line, subj := sl.line, sl.subject
	header := "Nats-Msg-Id: " + sl.id + "\r\n" // as the client keeps it: the id a piece of it
	fromClient := func() (subject, msgID string) {
		return string([]byte(subj)), header[len("Nats-Msg-Id: ") : len(header)-2]
	}

	s, id := fromClient()
	it := &item{subject: s, msgID: id, raw: line}
	decodeItem(it)
	if it.rej != nil {
		t.Fatalf("rejected: %+v", *it.rej)
	}
	if it.subject != "" {
		t.Errorf("the item keeps the client's subject %q", it.subject)
	}
	if it.msgID != sl.id || unsafe.StringData(it.msgID) != unsafe.StringData(it.env.ID) {
		t.Errorf("msgID %q is not the event's id string (it keeps the client's header block)", it.msgID)
	}
	if got := it.subjectOf(); got != subj {
		t.Errorf("subjectOf = %q, want %q", got, subj)
	}
	typ := it.env.Type

	s, _ = fromClient()
	it = &item{subject: s, msgID: "another-id", raw: line}
	decodeItem(it)
	if it.rej != nil || it.msgID != "another-id" {
		t.Errorf("a message id other than the event's became %q (rej %v)", it.msgID, it.rej)
	}

	wrong := events.EventsPrefix + ".elsewhere.r." + string(typ)
	it = &item{subject: wrong, msgID: sl.id, raw: line}
	decodeItem(it)
	if it.rej == nil || it.subject != wrong || it.subjectOf() != wrong {
		t.Errorf("a reject's subject became %q (subjectOf %q, rej %v), want %q", it.subject, it.subjectOf(), it.rej, wrong)
	}
}
