package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	bus        *Bus // its current JetStream context, at each publish: the connection may be replaced
	ackTimeout time.Duration
	sem        chan struct{}
	onAck      func(Ack) // nil unless WithAckFunc

	mu         sync.Mutex
	failed     []PublishError
	queue      []*pending // published, acknowledgement not yet collected; oldest first
	collecting bool       // a collector goroutine is draining queue
	wg         sync.WaitGroup
}

// pending is one asynchronous publish awaiting its acknowledgement.
type pending struct {
	subject, msgID string
	header         nats.Header // nil for most messages
	data           []byte
	ack            jetstream.PubAckFuture
	deadline       time.Time
}

// msg returns a new message for one attempt at publishing it: the library keeps the message
// it is given (to retry it) and sets headers on it, so attempts share nothing mutable.
func (it *pending) msg() *nats.Msg {
	m := &nats.Msg{Subject: it.subject, Data: it.data}
	if it.header != nil {
		m.Header = maps.Clone(it.header)
	}
	return m
}

// Ack is the acknowledgement of one publish, as given to the function of WithAckFunc.
type Ack struct {
	Subject, MsgID string
	// Duplicate says that the stream already held a message with this Nats-Msg-Id (published
	// within the duplicate window) and stored nothing new.
	Duplicate bool
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

// WithAckFunc has the Publisher call f with every acknowledgement, before Wait can return for
// it; a failed publish is reported by Wait, not to f. Calls may come from several goroutines at
// once, in no particular order: f must be safe for concurrent use and should be quick.
func WithAckFunc(f func(Ack)) PublisherOption {
	return func(p *Publisher) error {
		if f == nil {
			return fmt.Errorf("%w: nil ack func", ErrConfig)
		}
		p.onAck = f
		return nil
	}
}

// NewPublisher returns a Publisher on the bus.
func (b *Bus) NewPublisher(opts ...PublisherOption) (*Publisher, error) {
	p := &Publisher{bus: b, ackTimeout: 10 * time.Second, sem: make(chan struct{}, DefaultMaxInFlight)}
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
	return p.publish(ctx, &pending{subject: subject, msgID: msgID, data: data})
}

// PublishMsg is Publish for a message with headers: m's subject, data and headers, with its
// Nats-Msg-Id header (if any) as the msg id. The Publisher keeps m.Data until the publish is
// acknowledged or has failed; the caller must not change it.
func (p *Publisher) PublishMsg(ctx context.Context, m *nats.Msg) error {
	it := &pending{subject: m.Subject, data: m.Data}
	if m.Header != nil {
		it.header = maps.Clone(m.Header)
		it.msgID = m.Header.Get(jetstream.MsgIDHeader)
	}
	return p.publish(ctx, it)
}

func (p *Publisher) publish(ctx context.Context, it *pending) error {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: %v", ErrPublish, it.subject, ctx.Err())
	}
	p.wg.Add(1)
	it.deadline = time.Now().Add(p.ackTimeout)
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
	return p.bus.jetStream().PublishMsgAsync(it.msg(), jetstream.WithMsgID(it.msgID),
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
		ack, err := p.await(it)
		p.done(it, ack, err)
	}
}

// await returns its acknowledgement, or the error that makes it fail. A publish
// pending when the connection drops fails at once with ErrDisconnected; it is published
// again (same msg id, so stored at most once) until its deadline: a brief outage costs a
// delay, not a failure.
func (p *Publisher) await(it *pending) (*jetstream.PubAck, error) {
	timer := time.NewTimer(time.Until(it.deadline))
	defer timer.Stop()
	for {
		select {
		case ack := <-it.ack.Ok():
			return ack, nil
		case err := <-it.ack.Err():
			if !errors.Is(err, nats.ErrDisconnected) && !errors.Is(err, nats.ErrConnectionClosed) {
				return nil, err
			}
			for {
				// Wait for the connection to be back, not a fixed pause per message: the
				// collector comes to the publishes one by one, and after the reconnect
				// every one behind this is republished at once.
				if !p.waitConnected(it.deadline) {
					return nil, err
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
			case ack := <-it.ack.Ok():
				return ack, nil
			default:
			}
			return nil, fmt.Errorf("no acknowledgement within %v: %w", p.ackTimeout, context.DeadlineExceeded)
		}
	}
}

// publishSync publishes one message and waits for its acknowledgement. A request written
// to a connection as it breaks gets no reply and no error, so each attempt has a fifth of
// the ack timeout; attempts repeat (same msg id, so stored at most once) until the deadline.
func (p *Publisher) publishSync(it *pending) {
	var ack *jetstream.PubAck
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
		ack, err = p.bus.jetStream().PublishMsg(actx, it.msg(), jetstream.WithMsgID(it.msgID),
			jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100*time.Millisecond))
		cancel()
		if !retryable(err) {
			break
		}
	}
	if err == nil && ack == nil { // the deadline passed before the first attempt
		err = context.DeadlineExceeded
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no acknowledgement within %v: %w", p.ackTimeout, err)
	}
	p.done(it, ack, err)
}

// retryable reports whether a synchronous publish may succeed if made again: it got no
// reply in time, the connection dropped, or no stream leader answered.
func retryable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse)
}

// waitConnected polls until the connection is up (true) or the deadline passes (false).
func (p *Publisher) waitConnected(deadline time.Time) bool {
	for !p.bus.Connected() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Now().Before(deadline)
}

// done records the outcome of one publish (its acknowledgement, or the error that made it
// fail) and frees its room.
func (p *Publisher) done(it *pending, ack *jetstream.PubAck, err error) {
	switch {
	case err != nil:
		p.mu.Lock()
		p.failed = append(p.failed, PublishError{Subject: it.subject, MsgID: it.msgID, Err: err})
		p.mu.Unlock()
	case p.onAck != nil:
		p.onAck(Ack{Subject: it.subject, MsgID: it.msgID, Duplicate: ack != nil && ack.Duplicate})
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
