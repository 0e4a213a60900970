package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// eventsStream caches the handle of DITTO_EVENTS: getting it costs a request, and every
// delivery reads the last run.started of its run from it.
type eventsStream struct {
	mu sync.Mutex
	s  *bus.Stream
}

func (w *Worker) eventsStream(ctx context.Context) (*bus.Stream, error) {
	w.events.mu.Lock()
	defer w.events.mu.Unlock()
	if w.events.s == nil {
		s, err := w.bus.Stream(ctx, events.EventsStream)
		if err != nil {
			return nil, err
		}
		w.events.s = s
	}
	return w.events.s, nil
}

// lastAttempt returns the attempt of the run's latest stored run.started, 0 if there is none.
// One request to the stream (its last message on the run's run.started subject).
//
// Attempts cannot be numbered by the delivery count alone: a single nats-server persists
// consumer delivery counts only periodically, so after it is killed a job can come back with
// NumDelivered 1 although an attempt 1 of its run is already stored. Every attempt the worker
// records is numbered above the latest stored one, so the latest run.started holds the
// highest attempt.
func (w *Worker) lastAttempt(ctx context.Context, study, run string) (int, error) {
	subject, err := events.Subject(study, run, events.TypeRunStarted)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, e, err := w.lastEvent(ctx, subject)
	if err != nil || e == nil {
		return 0, err
	}
	return e.Attempt, nil
}

// lastEvent returns the last stored event on subject (wildcards allowed) and its stream
// sequence, or 0 and nil when there is none.
func (w *Worker) lastEvent(ctx context.Context, subject string) (uint64, *events.Envelope, error) {
	s, err := w.eventsStream(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("worker: %w", err)
	}
	m, err := s.LastMsg(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("worker: %w", err)
	}
	e, err := events.Decode(m.Data)
	if err != nil {
		return 0, nil, fmt.Errorf("worker: last event on %s: %w", subject, err)
	}
	return m.Sequence, &e, nil
}
