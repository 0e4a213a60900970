package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultMaxInFlight bounds the publishes awaiting acknowledgement per Publisher.
const DefaultMaxInFlight = 256

// Publisher publishes asynchronously with at most MaxInFlight publishes awaiting
// acknowledgement; Publish blocks (honouring ctx) while the bound is reached. Every message
// carries Nats-Msg-Id, so re-publishing the same event is a no-op within the duplicate window.
// Wait returns once every publish made so far is acknowledged, reporting each one that failed:
// a caller that sees Wait return nil knows nothing it published was lost.
//
// Publishes go out with JetStream's PublishAsync; one collector goroutine per Publisher, alive
// only while acknowledgements are outstanding, awaits them in order. This costs neither a
// goroutine nor a round trip per message, as a synchronous publish per message did.
//
// A Publisher is safe for concurrent use.
type Publisher struct {
	js         jetstream.JetStream
	ackTimeout time.Duration
	sem        chan struct{}

	mu         sync.Mutex
	failed     []PublishError
	queue      []*pending // published, acknowledgement not yet collected; oldest first
	collecting bool       // a collector goroutine is draining queue
	wg         sync.WaitGroup
}

// pending is one asynchronous publish awaiting its acknowledgement.
type pending struct {
	subject, msgID string
	data           []byte
	ack            jetstream.PubAckFuture
	deadline       time.Time
}

// PublisherOption configures a Publisher.
type PublisherOption func(*Publisher) error

// WithMaxInFlight sets the bound on unacknowledged publishes (>= 1).
func WithMaxInFlight(n int) PublisherOption {
	return func(p *Publisher) error {
		if n < 1 {
			return fmt.Errorf("%w: max in flight %d, want >= 1", ErrConfig, n)
		}
		p.sem = make(chan struct{}, n)
		return nil
	}
}

// WithAckTimeout sets how long one publish waits for its acknowledgement (default 10s).
func WithAckTimeout(d time.Duration) PublisherOption {
	return func(p *Publisher) error {
		if d <= 0 {
			return fmt.Errorf("%w: ack timeout %v", ErrConfig, d)
		}
		p.ackTimeout = d
		return nil
	}
}

// NewPublisher returns a Publisher on the bus.
func (b *Bus) NewPublisher(opts ...PublisherOption) (*Publisher, error) {
	p := &Publisher{js: b.js, ackTimeout: 10 * time.Second, sem: make(chan struct{}, DefaultMaxInFlight)}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PublishEvent encodes e (validating it) and publishes it on its subject with its id as
// Nats-Msg-Id. An invalid event is returned as an error at once and nothing is published.
func (p *Publisher) PublishEvent(ctx context.Context, e *events.Envelope) error {
	data, err := events.Encode(e)
	if err != nil {
		return err
	}
	subject, err := events.SubjectOf(e)
	if err != nil {
		return err
	}
	return p.Publish(ctx, subject, e.ID, data)
}

// Publish publishes data on subject with the given Nats-Msg-Id. It returns once the message
// is handed to the connection; the acknowledgement is collected in the background and any
// failure is reported by Wait. It returns an error only when ctx ends while waiting for room.
// When the connection's own window of asynchronous publishes (shared by every Publisher on
// the bus) is full, it may wait up to 200ms more, not watching ctx, before falling back to a
// synchronous publish.
func (p *Publisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: %v", ErrPublish, subject, ctx.Err())
	}
	p.wg.Add(1)
	it := &pending{subject: subject, msgID: msgID, data: data, deadline: time.Now().Add(p.ackTimeout)}
	ack, err := p.publishAsync(it)
	if err != nil {
		// The connection's window of asynchronous publishes, shared by every Publisher on
		// the bus, is full (ErrTooManyStalledMsgs), or the connection refused the message:
		// publish this one synchronously, which waits for room and reports its own failure.
		go p.publishSync(it)
		return nil
	}
	it.ack = ack
	p.mu.Lock()
	p.queue = append(p.queue, it)
	if !p.collecting {
		// One collector per Publisher while acknowledgements are outstanding, none when
		// idle: a Publisher has no Close, and callers make one per run or request.
		p.collecting = true
		go p.collect()
	}
	p.mu.Unlock()
	return nil
}

// publishAsync hands one message to the connection; JetStream's async publisher retries the
// transient "no responders" of a stream leader election.
func (p *Publisher) publishAsync(it *pending) (jetstream.PubAckFuture, error) {
	return p.js.PublishAsync(it.subject, it.data, jetstream.WithMsgID(it.msgID),
		jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100*time.Millisecond))
}

// collect waits for the acknowledgements in publishing order and frees their room, until none
// is left. A late acknowledgement delays freeing the room of those behind it (which JetStream
// mostly acknowledges in order anyway), never their outcome: each has its own deadline.
func (p *Publisher) collect() {
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.queue = nil
			p.collecting = false
			p.mu.Unlock()
			return
		}
		it := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.done(it, p.await(it))
	}
}

// await returns nil once it is acknowledged, or the error that makes it fail. A publish
// pending when the connection drops fails at once with ErrDisconnected; it is published
// again (same msg id, so stored at most once) until its deadline: a brief outage costs a
// delay, not a failure.
func (p *Publisher) await(it *pending) error {
	timer := time.NewTimer(time.Until(it.deadline))
	defer timer.Stop()
	for {
		select {
		case <-it.ack.Ok():
			return nil
		case err := <-it.ack.Err():
			if !errors.Is(err, nats.ErrDisconnected) {
				return err
			}
			for {
				// Wait for the connection to be back, not a fixed pause per message: the
				// collector comes to the publishes one by one, and after the reconnect
				// every one behind this is republished at once.
				if !p.waitConnected(it.deadline) {
					return err
				}
				ack, perr := p.publishAsync(it)
				if perr == nil {
					it.ack = ack
					break
				}
				err = perr
				time.Sleep(50 * time.Millisecond)
			}
		case <-timer.C:
			// The collector may come to it after its deadline with the ack already in.
			select {
			case <-it.ack.Ok():
				return nil
			default:
			}
			return fmt.Errorf("no acknowledgement within %v: %w", p.ackTimeout, context.DeadlineExceeded)
		}
	}
}

// publishSync publishes one message and waits for its acknowledgement. A request written
// to a connection as it breaks gets no reply and no error, so each attempt has a fifth of
// the ack timeout; attempts repeat (same msg id, so stored at most once) until the deadline.
func (p *Publisher) publishSync(it *pending) {
	var err error
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !p.waitConnected(it.deadline) {
			break
		}
		remaining := time.Until(it.deadline)
		if remaining <= 0 {
			break
		}
		actx, cancel := context.WithTimeout(context.Background(), min(remaining, p.ackTimeout/5))
		_, err = p.js.Publish(actx, it.subject, it.data, jetstream.WithMsgID(it.msgID),
			jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100*time.Millisecond))
		cancel()
		if !retryable(err) {
			break
		}
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no acknowledgement within %v: %w", p.ackTimeout, err)
	}
	p.done(it, err)
}

// retryable reports whether a synchronous publish may succeed if made again: it got no
// reply in time, the connection dropped, or no stream leader answered.
func retryable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// waitConnected polls until the connection is up (true) or the deadline passes (false).
func (p *Publisher) waitConnected(deadline time.Time) bool {
	for !p.js.Conn().IsConnected() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Now().Before(deadline)
}

// done records the outcome of one publish and frees its room.
func (p *Publisher) done(it *pending, err error) {
	if err != nil {
		p.mu.Lock()
		p.failed = append(p.failed, PublishError{Subject: it.subject, MsgID: it.msgID, Err: err})
		p.mu.Unlock()
	}
	<-p.sem
	p.wg.Done()
}

// Wait blocks until every publish made so far is acknowledged or has failed, then returns
// an *AckError listing the failures (and forgets them), or nil. If ctx ends first it returns
// ctx's error and the failures stay for the next Wait.
func (p *Publisher) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("bus: wait for acks: %w", ctx.Err())
	}
	p.mu.Lock()
	failed := p.failed
	p.failed = nil
	p.mu.Unlock()
	if len(failed) > 0 {
		return &AckError{Failed: failed}
	}
	return nil
}

// IsAckError reports whether err lists unacknowledged publishes, and returns them.
func IsAckError(err error) ([]PublishError, bool) {
	var ae *AckError
	if errors.As(err, &ae) {
		return ae.Failed, true
	}
	return nil, false
}
