package harness

import (
	"context"
	"time"

	"github.com/dittolab/ditto/events"
)

// Emitter receives the events of one run, in order, from the goroutine running it. Run stops at
// the first error and returns it wrapped in ErrEmit; an Emitter that wants to finish the run
// despite a transient failure must retry internally. Emit may retain p: the harness never
// modifies a payload after emitting it.
type Emitter interface {
	Emit(ctx context.Context, p events.Payload) error
}

// EmitterFunc adapts a function to Emitter.
type EmitterFunc func(ctx context.Context, p events.Payload) error

// Emit implements Emitter.
func (f EmitterFunc) Emit(ctx context.Context, p events.Payload) error { return f(ctx, p) }

// Sequencer is the Emitter a worker wraps around its publisher: it puts each payload in an
// envelope with the run's identity and the next sequence number (from 1, gapless) and hands it
// to Publish. It does not validate the envelope itself: Publish is expected to encode it with
// events.Encode, which validates (payloads carry canonical JSON that is costly to re-check, so
// the check is done once, there). A Publish error leaves the sequence number unused, so a retried
// Emit reuses it. Use one Sequencer per run attempt; it is not safe for concurrent use (a run
// emits from one goroutine).
type Sequencer struct {
	Study   string
	Run     string
	Attempt int // from 1
	Source  events.Source
	// Publish receives each envelope in order; it may retain it.
	Publish func(ctx context.Context, e *events.Envelope) error
	// Now stamps envelopes; nil means time.Now. Envelope times are metadata, never inputs to
	// the run.
	Now func() time.Time

	seq int64
}

var _ Emitter = (*Sequencer)(nil)

// Emit implements Emitter.
func (s *Sequencer) Emit(ctx context.Context, p events.Payload) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	e := events.New(s.Study, s.Run, now(), p)
	e.Attempt = s.Attempt
	if e.Attempt == 0 {
		e.Attempt = 1
	}
	e.Seq = s.seq + 1
	e.Source = s.Source
	if err := s.Publish(ctx, &e); err != nil {
		return err
	}
	s.seq = e.Seq
	return nil
}

// Seq returns the sequence number of the last event published.
func (s *Sequencer) Seq() int64 { return s.seq }
