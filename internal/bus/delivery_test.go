package bus_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// DeliveryOf must read what Metadata reads, on messages a real server delivers.
func TestDeliveryOfMatchesMetadata(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher()
	const n = 7
	for i := int64(1); i <= n; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: "delivery", AckWait: time.Minute, MaxAckPending: 100}, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(n)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for m := range batch.Messages() {
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		d, err := bus.DeliveryOf(m)
		if err != nil || d.StreamSeq != meta.Sequence.Stream || d.Pending != meta.NumPending {
			t.Errorf("DeliveryOf(%q) = %+v, %v; Metadata says stream sequence %d, pending %d", m.Reply(), d, err, meta.Sequence.Stream, meta.NumPending)
		}
		got++
	}
	if got != n-2 {
		t.Errorf("fetched %d messages, want %d", got, n-2)
	}
}

// replyMsg is a message with only a reply subject.
type replyMsg struct {
	jetstream.Msg
	reply string
}

func (m replyMsg) Reply() string { return m.reply }

func TestDeliveryOfSubjects(t *testing.T) {
	for _, tc := range []struct {
		name, give string
		want       bus.Delivery
		wantErr    bool
	}{
		{"old form", "$JS.ACK.DITTO_EVENTS.analyzer.1.4711.12.1700000000000000000.33", bus.Delivery{StreamSeq: 4711, Pending: 33}, false},
		{"domain and hash", "$JS.ACK._.ACCHASH.DITTO_EVENTS.analyzer.2.98.97.1700000000000000000.0", bus.Delivery{StreamSeq: 98}, false},
		{"with last token", "$JS.ACK.hub.ACCHASH.S.c.1.5.5.1700000000000000000.6.r4nd", bus.Delivery{StreamSeq: 5, Pending: 6}, false},
		{"not an ack subject", "_INBOX.abc.def", bus.Delivery{}, true},
		{"empty", "", bus.Delivery{}, true},
		{"eight tokens", "$JS.ACK.a.b.S.c.1.5.5.17", bus.Delivery{}, true},
		{"too few tokens", "$JS.ACK.S.c.1.5", bus.Delivery{}, true},
		{"not a number", "$JS.ACK.S.c.1.x5.5.17.0", bus.Delivery{}, true},
		{"negative", "$JS.ACK.S.c.1.-5.5.17.0", bus.Delivery{}, true},
		{"too long", "$JS.ACK.S.c.1.12345678901234567890.5.17.0", bus.Delivery{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bus.DeliveryOf(replyMsg{reply: tc.give})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("DeliveryOf(%q) = %+v, %v; want %+v (error %v)", tc.give, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !errors.Is(err, bus.ErrNotDelivery) {
				t.Errorf("DeliveryOf(%q) error %v, want ErrNotDelivery", tc.give, err)
			}
		})
	}
}

// Terminate by reply subject must terminate the message as TermWithReason does: the server
// sends its MSG_TERMINATED advisory for that stream sequence, with the reason.
func TestTerminateByReply(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher()
	for i := int64(1); i <= 3; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	adv, err := b.Conn().SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + events.EventsStream + ".term")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: "term", AckWait: time.Minute, MaxAckPending: 100}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3)
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for m := range batch.Messages() {
		replies = append(replies, m.Reply())
	}
	if len(replies) != 3 {
		t.Fatalf("fetched %d messages, want 3", len(replies))
	}
	if err := b.Terminate(replies[1], "not an event"); err != nil {
		t.Fatalf("Terminate(%q) = %v", replies[1], err)
	}
	m, err := adv.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no termination advisory: %v", err)
	}
	var got struct {
		StreamSeq uint64 `json:"stream_seq"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal(m.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.StreamSeq != 2 || got.Reason != "not an event" {
		t.Errorf("advisory says stream sequence %d, reason %q; want 2, %q", got.StreamSeq, got.Reason, "not an event")
	}
	if err := b.Terminate("_INBOX.abc", "x"); !errors.Is(err, bus.ErrNotDelivery) {
		t.Errorf(`Terminate("_INBOX.abc") = %v, want ErrNotDelivery`, err)
	}
}

// Ack by reply subject must acknowledge the message as jetstream.Msg.Ack does; on the ingest
// consumer (ack all) it acknowledges every message delivered before it too: the consumer's ack
// floor moves to that message's stream sequence.
func TestAckByReply(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t)
	p, _ := b.NewPublisher()
	for i := int64(1); i <= 4; i++ {
		if err := p.PublishEvent(ctx, testEvent(t, "run-1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := b.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: "ackreply", AckWait: time.Minute, MaxAckPending: 100}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(4)
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for m := range batch.Messages() {
		replies = append(replies, m.Reply())
	}
	if len(replies) != 4 {
		t.Fatalf("fetched %d messages, want 4", len(replies))
	}
	if err := b.Ack(replies[2]); err != nil {
		t.Fatalf("Ack(%q) = %v", replies[2], err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.AckFloor.Stream == 3 && info.NumAckPending == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ack floor at stream sequence %d with %d pending, want 3 with 1", info.AckFloor.Stream, info.NumAckPending)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Ack("_INBOX.abc"); !errors.Is(err, bus.ErrNotDelivery) {
		t.Errorf(`Ack("_INBOX.abc") = %v, want ErrNotDelivery`, err)
	}
}
