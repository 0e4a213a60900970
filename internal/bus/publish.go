package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
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
// A Publisher is safe for concurrent use.
type Publisher struct {
	js         jetstream.JetStream
	ackTimeout time.Duration
	sem        chan struct{}

	mu     sync.Mutex
	failed []PublishError
	wg     sync.WaitGroup
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
func (p *Publisher) Publish(ctx context.Context, subject, msgID string, data []byte) error {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: %v", ErrPublish, subject, ctx.Err())
	}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sem; p.wg.Done() }()
		// A synchronous publish per goroutine, bounded by the semaphore: it is the simplest
		// correct way to get a per-message result with a timeout, and it retries the
		// transient "no responders" of a stream leader election.
		actx, cancel := context.WithTimeout(context.Background(), p.ackTimeout)
		defer cancel()
		_, err := p.js.Publish(actx, subject, data, jetstream.WithMsgID(msgID),
			jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100*time.Millisecond))
		if err != nil {
			p.mu.Lock()
			p.failed = append(p.failed, PublishError{Subject: subject, MsgID: msgID, Err: err})
			p.mu.Unlock()
		}
	}()
	return nil
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
