package bus

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// DefaultBatchSize is how many messages a BatchPublisher sends in one fast batch.
const DefaultBatchSize = 10_000

// maxBatchFlow is the most messages the server lets a fast batch have unacknowledged between
// two of its flow acknowledgements (nats-server's limit).
const maxBatchFlow = 500

// BatchPublisher publishes a stream of messages from one goroutine as JetStream fast batches
// (nats-server 2.14 and later, on a stream with AllowBatchPublish): the server acknowledges
// every few hundred messages, and a whole batch once at its end, where Publisher has every
// message acknowledged on its own. That saves the server a reply per message and the client a
// reply to decode and a future to track per message; each message is stored as it is received,
// with its Nats-Msg-Id de-duplicated as any publish is (a duplicate in a batch is skipped and
// counted as stored).
//
// Batches are sent in "gap: fail" mode, so an acknowledgement of the batch's nth message
// says that it and every message before it are stored. Any message a batch did not get
// acknowledged (a lost message, a rejected one, a broken connection, an acknowledgement that
// did not come in time) is published again through a Publisher with the same msg id, so it
// is stored at most once; from then on every message goes through that Publisher, whose
// acknowledgements are per message and which retries across reconnects. A stream that does
// not allow batch publishing gets every message through the Publisher from the start.
//
// Wait has Publisher.Wait's contract: once it returns nil, nothing published was lost.
// A BatchPublisher is NOT safe for concurrent use: Publish and Wait must be called from one
// goroutine.
type BatchPublisher struct {
	bus      *Bus
	size     int
	flow     uint16
	timeout  time.Duration // for one batch acknowledgement
	fallback *Publisher
	// direct is set when messages go through fallback: the stream does not allow batches, or
	// a batch failed.
	direct bool

	stopped error // why batches are no longer used (nil while they are)

	// msg is reused for every message: the connection encodes it (headers included) into its
	// buffer as it is published, and neither it nor the batch keeps it.
	msg nats.Msg

	fp      jetstreamext.FastPublisher // the open batch, nil between batches
	batch   []*pending                 // its messages, in order
	acked   uint64                     // how many of them the server acknowledged
	failure *atomic.Pointer[error]     // the first error the open batch reported asynchronously
	batched int64
}

// NewBatchPublisher returns a BatchPublisher for the named stream, size messages a batch
// (DefaultBatchSize when 0). opts configure the Publisher that takes the messages batches did
// not store; its max in flight also bounds the messages a batch has unacknowledged (at most
// 1,000) and its ack timeout, a fifth of it, how long a batch waits for an acknowledgement.
func (b *Bus) NewBatchPublisher(ctx context.Context, stream string, size int, opts ...PublisherOption) (*BatchPublisher, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrConfig, size)
	}
	if size == 0 {
		size = DefaultBatchSize
	}
	fallback, err := b.NewPublisher(opts...)
	if err != nil {
		return nil, err
	}
	s, err := b.jetStream().Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("bus: batch publisher: stream %s: %w", stream, err)
	}
	// Two flow acknowledgements outstanding at most, as the client library does by default.
	flow := uint16(min(max(cap(fallback.sem)/2, 1), maxBatchFlow))
	p := &BatchPublisher{bus: b, size: size, flow: flow, timeout: fallback.ackTimeout / 5, fallback: fallback}
	if !s.CachedInfo().Config.AllowBatchPublish {
		p.direct, p.stopped = true, fmt.Errorf("bus: stream %s does not allow batch publishing", stream)
	}
	return p, nil
}

// Batched returns how many messages batches stored (acknowledged by the batches themselves,
// not through the fallback Publisher).
func (p *BatchPublisher) Batched() int64 { return p.batched }

// Stopped returns why messages no longer go in batches (a batch failed, or the stream does not
// allow them), or nil.
func (p *BatchPublisher) Stopped() error { return p.stopped }

// Publish sends data on subject with the given Nats-Msg-Id in the open batch (opening one if
// none is), and ends the batch when it is full. data must not change until Wait returns. It
// returns an error only when ctx ends while the fallback Publisher waits for room. It blocks
// while the batch has as many messages unacknowledged as the server allows (flow control), for
// at most a fifth of the ack timeout and not watching ctx: then the batch is abandoned. The
// first message of a batch and the end of a batch each wait for the server's answer.
func (p *BatchPublisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	it := &pending{subject: subject, msgID: msgID, data: data}
	if p.direct {
		return p.fallback.publish(ctx, it)
	}
	if p.fp == nil {
		// Each batch has its own record of failure: a late report of the previous one's
		// (its subscription ends as Close returns) must not fail this one.
		failure := new(atomic.Pointer[error])
		fp, err := jetstreamext.NewFastPublisher(p.bus.jetStream(),
			jetstreamext.FastPublishFlowControl{Flow: p.flow, MaxOutstandingAcks: 2, AckTimeout: p.timeout},
			jetstreamext.WithFastPublisherErrorHandler(func(err error) { failure.CompareAndSwap(nil, &err) }))
		if err != nil {
			return p.abandon(ctx, it, err)
		}
		p.fp, p.batch, p.acked, p.failure = fp, p.batch[:0], 0, failure
	}
	p.batch = append(p.batch, it)
	if p.msg.Header == nil {
		p.msg.Header = nats.Header{jetstream.MsgIDHeader: make([]string, 1)}
	}
	p.msg.Subject, p.msg.Data, p.msg.Reply = subject, data, ""
	p.msg.Header[jetstream.MsgIDHeader][0] = msgID
	ack, err := p.fp.AddMsg(&p.msg)
	if ack != nil {
		p.acked = max(p.acked, ack.AckSequence)
	}
	err = p.why(err)
	if err != nil {
		return p.abandon(ctx, nil, err)
	}
	if len(p.batch) >= p.size {
		return p.commit(ctx)
	}
	return nil
}

// commit ends the open batch and waits for its acknowledgement.
func (p *BatchPublisher) commit(ctx context.Context) error {
	ack, err := p.fp.Close(ctx)
	err = p.why(err)
	if ack != nil {
		p.acked = max(p.acked, ack.BatchSize)
	}
	if err == nil && p.acked < uint64(len(p.batch)) {
		err = fmt.Errorf("batch acknowledged %d of %d messages", p.acked, len(p.batch))
	}
	if err != nil {
		return p.abandon(ctx, nil, err)
	}
	p.batched += int64(len(p.batch))
	p.fp = nil
	return nil
}

// why returns the error the server reported for the open batch, if it reported one, in place of
// err from the batch's AddMsg or Close, or err. When the server refuses a batch's messages (a
// stream at its limits, a full disk), the publisher closes and then says only that
// (jetstreamext.ErrBatchClosed); the server's reason went to the batch's error handler as it
// closed.
func (p *BatchPublisher) why(err error) error {
	f := p.failure.Load()
	switch {
	case f == nil:
		return err
	case err == nil || errors.Is(err, jetstreamext.ErrBatchClosed):
		return *f
	default:
		return fmt.Errorf("%w (the server: %w)", err, *f)
	}
}

// abandon gives the open batch's unacknowledged messages (and then next, when it is not in the
// batch), and every later message, to the fallback Publisher. cause is why the batch failed
// (Stopped); it is not an error of the publishes, whose outcome Wait reports.
func (p *BatchPublisher) abandon(ctx context.Context, next *pending, cause error) error {
	p.direct, p.stopped = true, fmt.Errorf("bus: batch publishing stopped: %w", cause)
	acked := min(int(p.acked), len(p.batch))
	p.batched += int64(acked)
	rest := p.batch[acked:]
	if next != nil {
		rest = append(rest, next)
	}
	p.fp, p.batch = nil, nil
	for _, it := range rest {
		if err := p.fallback.publish(ctx, it); err != nil {
			return err
		}
	}
	return nil
}

// Wait ends the open batch, then waits, as Publisher.Wait does, for every message published
// through the fallback Publisher.
func (p *BatchPublisher) Wait(ctx context.Context) error {
	if p.fp != nil {
		if err := p.commit(ctx); err != nil {
			return err
		}
	}
	return p.fallback.Wait(ctx)
}
