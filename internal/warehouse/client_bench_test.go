package warehouse_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkClientAPI measures the NATS client's CPU per event for each way of taking a
// consumer's messages, on the same stream in one process, with what the analyzer keeps of each
// message (subject, reply subject, body, stream sequence, pending count, Nats-Msg-Id) and an
// acknowledgement every 10,000 messages: "next" (Messages, Next per message), "nextctx" (the
// same with a context per batch, as the analyzer's fetcher did), "consume" (a callback per
// message, as the analyzer's fetcher does) and "fetch" (Fetch of a batch at a time). The modes
// run one after the other, after a pass that reads the stream once: DITTO_BENCH_CLIENT_MODES
// lists them (default three rounds of next, nextctx, consume, fetch), each optionally with its
// pull-ahead in messages ("consume:10000"; default 2,000, the analyzer's until it pulled about
// 4 MiB ahead, 10,000 of these events). DITTO_BENCH_EVENTS
// sets the number of events (default 200,000). It prints one line a mode.
func BenchmarkClientAPI(b *testing.B) {
	n := envInt("DITTO_BENCH_EVENTS", 200_000)
	bs, brokerPID := externalServerPID(b)
	warehousetest.PublishFast(b, bs, benchMsgs(b, n)[:n])
	modes := strings.Split(strings.Repeat("next,nextctx,consume,fetch,", 3), ",")
	if m := os.Getenv("DITTO_BENCH_CLIENT_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	modes = append([]string{"next"}, modes...) // the first reads the stream once, unreported
	b.ResetTimer()
	for i, mode := range modes {
		if mode == "" {
			continue
		}
		ahead := 2_000
		if m, a, ok := strings.Cut(mode, ":"); ok {
			var err error
			if ahead, err = strconv.Atoi(a); err != nil {
				b.Fatalf("DITTO_BENCH_CLIENT_MODES: %q: %v", mode, err)
			}
			mode = m
		}
		durable := fmt.Sprintf("client-%d", i)
		c0, b0, t0 := cpuTime(), procCPU(brokerPID), time.Now()
		clientConsume(b, bs, durable, mode, ahead, n)
		c1, b1, t1 := cpuTime(), procCPU(brokerPID), time.Now()
		if err := bs.DeleteConsumer(context.Background(), events.EventsStream, durable); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			continue
		}
		perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		fmt.Printf("client API %-8s pull-ahead %5d: %7.0f events/s, client %.2f µs/event, broker %.2f µs/event\n",
			mode, ahead, float64(n)/t1.Sub(t0).Seconds(), perEvent(c1-c0), perEvent(b1-b0))
	}
}

// clientKept is what the analyzer keeps of a delivered message.
type clientKept struct {
	subject, reply, msgID string
	raw                   []byte
	seq, pending          uint64
}

func keep(m jetstream.Msg) clientKept {
	k := clientKept{subject: m.Subject(), reply: m.Reply(), raw: m.Data()}
	if d, err := bus.DeliveryOf(m); err == nil {
		k.seq, k.pending = d.StreamSeq, d.Pending
	}
	if h := m.Headers(); h != nil {
		k.msgID = h.Get(jetstream.MsgIDHeader)
	}
	return k
}

// clientConsume takes n messages from a new consumer named durable through the client API mode,
// keeping them in batches of 10,000, each acknowledged (cumulatively) by its last message.
func clientConsume(b *testing.B, bs *bus.Bus, durable, mode string, ahead, n int) {
	const batch = 10_000
	ctx := warehousetest.Context(b, 10*time.Minute)
	c, err := bs.EnsureIngestConsumer(ctx, bus.IngestConsumer{Durable: durable, AckWait: time.Minute, MaxAckPending: 6 * batch}, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	kept := make([]clientKept, 0, batch)
	got := 0
	// add keeps m and says whether n messages have been taken.
	add := func(m jetstream.Msg) bool {
		kept = append(kept, keep(m))
		got++
		if len(kept) == batch || got == n {
			if err := bs.Ack(kept[len(kept)-1].reply); err != nil {
				b.Error(err)
			}
			kept = kept[:0]
		}
		return got == n
	}
	switch mode {
	case "next", "nextctx":
		it, err := c.Messages(jetstream.PullMaxMessages(ahead))
		if err != nil {
			b.Fatal(err)
		}
		defer it.Stop()
		// takeBatch takes one batch's messages, with a context of its own in "nextctx", and says
		// whether n messages have been taken.
		takeBatch := func() bool {
			bctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for {
				var m jetstream.Msg
				if mode == "next" {
					m, err = it.Next()
				} else {
					m, err = it.Next(jetstream.NextContext(bctx))
				}
				if err != nil {
					b.Fatal(err)
				}
				if add(m) {
					return true
				}
				if len(kept) == 0 {
					return false
				}
			}
		}
		for !takeBatch() {
		}
	case "consume":
		done := make(chan struct{})
		cc, err := c.Consume(func(m jetstream.Msg) {
			if got < n && add(m) {
				close(done)
			}
		}, jetstream.PullMaxMessages(ahead))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Stop()
		select {
		case <-done:
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
	case "fetch":
		for {
			mb, err := c.Fetch(ahead, jetstream.FetchMaxWait(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			for m := range mb.Messages() {
				if add(m) {
					return
				}
			}
			if err := mb.Error(); err != nil {
				b.Fatal(err)
			}
		}
	default:
		b.Fatalf("DITTO_BENCH_CLIENT_MODES: unknown mode %q (next, nextctx, consume, fetch)", mode)
	}
}
