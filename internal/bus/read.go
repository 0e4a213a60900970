package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream is a read-only handle on one of ditto's streams: its state, how many messages its
// subjects hold, stored messages, a consumer's position, and ordered reads. It creates,
// changes and deletes nothing (the ordered reads' ephemeral consumers excepted, which the
// server removes by itself). Get one with (*Bus).Stream; it is safe for concurrent use.
type Stream struct {
	s jetstream.Stream
}

// Stream returns a handle on the stream called name (one request, which also caches its info).
func (b *Bus) Stream(ctx context.Context, name string) (*Stream, error) {
	s, err := b.jetStream().Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", name, err)
	}
	return &Stream{s: s}, nil
}

// Name returns the stream's name.
func (s *Stream) Name() string { return s.s.CachedInfo().Config.Name }

// CachedInfo returns the stream's info as of the handle's creation or its latest Info call.
func (s *Stream) CachedInfo() *jetstream.StreamInfo { return s.s.CachedInfo() }

// Info fetches the stream's current info (one request).
func (s *Stream) Info(ctx context.Context) (*jetstream.StreamInfo, error) {
	info, err := s.s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s info: %w", s.Name(), err)
	}
	return info, nil
}

// SubjectCounts returns how many messages each subject matching filter holds; subjects with
// none are absent. The server pages the answer; a filter matching millions of subjects costs
// as many map entries.
func (s *Stream) SubjectCounts(ctx context.Context, filter string) (map[string]uint64, error) {
	info, err := s.s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s subjects %s: %w", s.Name(), filter, err)
	}
	return info.State.Subjects, nil
}

// Count returns how many messages the subjects matching filter hold ("": the whole stream).
func (s *Stream) Count(ctx context.Context, filter string) (uint64, error) {
	if filter == "" {
		info, err := s.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.State.Msgs, nil
	}
	counts, err := s.SubjectCounts(ctx, filter)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// LastMsg returns the stream's last message on subject. The error wraps
// jetstream.ErrMsgNotFound when there is none.
func (s *Stream) LastMsg(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	m, err := s.s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s last message on %s: %w", s.Name(), subject, err)
	}
	return m, nil
}

// Msg returns the message stored at sequence seq. The error wraps jetstream.ErrMsgNotFound
// when the stream does not hold it.
func (s *Stream) Msg(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := s.s.GetMsg(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s message %d: %w", s.Name(), seq, err)
	}
	return m, nil
}

// ConsumerInfo returns the state of the stream's durable consumer called name (its
// acknowledgement floor, pending messages). The error wraps jetstream.ErrConsumerNotFound when
// there is no such consumer.
func (s *Stream) ConsumerInfo(ctx context.Context, name string) (*jetstream.ConsumerInfo, error) {
	c, err := s.s.Consumer(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s on %s: %w", name, s.Name(), err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s on %s: %w", name, s.Name(), err)
	}
	return info, nil
}

// readBatch bounds the messages one fetch of Read asks for; readWait how long a fetch waits.
const (
	readBatch = 1000
	readWait  = 2 * time.Second
)

// Read calls fn with the first n messages on the subjects matching filter ("": every
// message), in stream order, through an ordered consumer: nothing is acknowledged and no
// durable state is left on the server. n is usually what Count returned just before. Read
// stops at fn's first error and returns it. When the stream delivers fewer than n messages (a
// fetch comes back empty: messages removed since they were counted, or a server busy electing
// a leader) it returns an error wrapping ErrShortRead.
func (s *Stream) Read(ctx context.Context, filter string, n uint64, fn func(jetstream.Msg) error) error {
	if n == 0 {
		return nil
	}
	var occ jetstream.OrderedConsumerConfig
	if filter != "" {
		occ.FilterSubjects = []string{filter}
	}
	cons, err := s.s.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
	}
	for got := uint64(0); got < n; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
		}
		batch, err := cons.Fetch(int(min(n-got, readBatch)), jetstream.FetchMaxWait(readWait))
		if err != nil {
			return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
		}
		k := uint64(0)
		for m := range batch.Messages() {
			k++
			if err := fn(m); err != nil {
				return err
			}
		}
		if k == 0 {
			cause := ErrShortRead
			if berr := batch.Error(); berr != nil && !errors.Is(berr, jetstream.ErrNoMessages) {
				cause = fmt.Errorf("%w: %w", ErrShortRead, berr)
			}
			return fmt.Errorf("bus: read %s %s: %d of %d messages delivered: %w", s.Name(), filter, got, n, cause)
		}
		got += k
	}
	return nil
}

// ReadThrough calls fn with the messages on the subjects matching filter, in stream order, up
// to and including the one at stream sequence last (which must match filter), through an
// ordered consumer. It is for reading everything stored before a marker: the marker's own
// sequence bounds the read, so no count is asked first. Every fetch asks only for what is
// stored (no wait), which is all a read up to a stored sequence needs, and is drained before
// ReadThrough returns, so nothing of it outlives the call. When the stream delivers nothing
// more before last (a fetch comes back empty) it returns an error wrapping ErrShortRead.
func (s *Stream) ReadThrough(ctx context.Context, filter string, last uint64, fn func(jetstream.Msg) error) error {
	cons, err := s.s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
		}
		batch, err := cons.FetchNoWait(readBatch)
		if err != nil {
			return fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
		}
		k, done, ferr := 0, false, error(nil)
		for m := range batch.Messages() {
			k++
			if done || ferr != nil {
				continue // drain: the fetch ends when its messages are read
			}
			meta, err := m.Metadata()
			switch {
			case err != nil:
				ferr = fmt.Errorf("bus: read %s %s: %w", s.Name(), filter, err)
			case meta.Sequence.Stream > last:
				done = true
			default:
				ferr = fn(m)
				done = meta.Sequence.Stream == last
			}
		}
		if ferr != nil || done {
			return ferr
		}
		if k == 0 {
			cause := ErrShortRead
			if berr := batch.Error(); berr != nil && !errors.Is(berr, jetstream.ErrNoMessages) {
				cause = fmt.Errorf("%w: %w", ErrShortRead, berr)
			}
			return fmt.Errorf("bus: read %s %s: nothing delivered before sequence %d: %w", s.Name(), filter, last, cause)
		}
	}
}
