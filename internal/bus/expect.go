package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrConflict is returned (wrapped) by PublishIfLast when the stream did not hold what the
// caller expected: another message matching the filter was stored since the caller looked, or
// one was being stored at the same moment.
var ErrConflict = errors.New("bus: conditional publish refused: the stream changed")

// PublishIfLast publishes data on subject with msgID as Nats-Msg-Id, only if the last message
// of the stream matching filter (a subject that may hold wildcards) has sequence last — 0
// meaning that no message matches it — and returns the stored message's sequence once the
// stream has acknowledged it. The check and the store are one step in the stream's leader
// (JetStream's expected-last-subject-sequence): of two publishes made with the same filter and
// the same last, at most one is stored. That makes it a compare-and-set on everything the
// filter covers.
//
// When the condition does not hold, the error wraps ErrConflict and nothing is stored. The
// publish is made again while no stream leader answers (an election) or no answer comes in
// time, until ctx ends. A publish that was stored but whose acknowledgement was lost can come
// back as a conflict on the retry (a single server checks the condition before it looks for a
// duplicate Nats-Msg-Id; a cluster answers with the first publish's acknowledgement): a caller
// for which that matters reads the last message matching the filter and compares its id.
func (b *Bus) PublishIfLast(ctx context.Context, subject, msgID string, data []byte, filter string, last uint64) (uint64, error) {
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(msgID), jetstream.WithExpectLastSequenceForSubject(last, filter),
		jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100 * time.Millisecond)}
	for {
		// A request written to a connection as it breaks gets no reply and no error: each
		// try has a bounded wait, and a try that timed out is made again.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ack, err := b.jetStream().Publish(tctx, subject, data, opts...)
		cancel()
		switch {
		case err == nil:
			return ack.Sequence, nil
		case isWrongLastSequence(err):
			return 0, fmt.Errorf("%w: %s, expecting last sequence %d on %s: %v", ErrConflict, subject, last, filter, err)
		case ctx.Err() != nil:
			return 0, fmt.Errorf("%w: %s: %w", ErrPublish, subject, ctx.Err())
		case !retryable(err):
			return 0, fmt.Errorf("%w: %s: %w", ErrPublish, subject, err)
		}
		if !b.waitConnected(ctx) {
			return 0, fmt.Errorf("%w: %s: %w", ErrPublish, subject, ctx.Err())
		}
	}
}

// isWrongLastSequence reports whether the stream refused a publish for its expected last
// sequence: 10071 on a single server, 10164 on a replicated stream (which also answers it
// while another conditional publish on the same filter is being stored).
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// waitConnected polls until the connection is up (true) or ctx ends (false).
func (b *Bus) waitConnected(ctx context.Context) bool {
	for !b.Connected() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return ctx.Err() == nil
}
