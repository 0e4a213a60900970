package worker

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/nats-io/nats.go/jetstream"
)

// maxLookupEvents bounds the events read to decide whether a redelivered job's run is already
// recorded; for a run with more, only its latest run.finished is read (see history).
const maxLookupEvents = 5000

// runHistory is what the stream holds of a run, as a redelivered job needs it.
type runHistory struct {
	// recorded is the highest attempt stored complete (gapless from seq 1, folding without
	// error, finished with a status other than aborted), 0 if none; status is its status.
	recorded int
	status   string
	// newest is the highest attempt with stored events; newestDone says it has run.finished;
	// newestAt is the broker's time of its latest stored event.
	newest     int
	newestDone bool
	newestAt   time.Time
	// lastSeq is the stream sequence of the run's latest stored event (0: none): what a claim
	// on the run expects to be still the latest (see attempt.claim).
	lastSeq uint64
}

// unfinished reports whether the run's newest attempt has not finished: its worker may still
// be running it.
func (h runHistory) unfinished() bool { return h.newest > 0 && !h.newestDone }

// history reads the run's stored events from DITTO_EVENTS. A worker that crashed after its
// events were acknowledged but before it acknowledged the job, or whose job ack was lost,
// leaves a recorded attempt; re-running the job would record the run twice. It is read for
// every delivery of a run with a stored run.started (whatever the delivery count, which a
// restarted single server may have forgotten). It returns an error when it could not read the
// history (a stream leader being elected, say): the caller must not re-run the job then, since
// the run may well be recorded. A run with more than maxLookupEvents events is read from three
// of its messages (longHistory).
func (w *Worker) history(ctx context.Context, study, run string) (runHistory, error) {
	var h runHistory
	filter, err := events.Subject(study, run, ">")
	if err != nil {
		return h, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := w.eventsStream(ctx)
	if err != nil {
		return h, fmt.Errorf("worker: %w", err)
	}
	want, err := s.Count(ctx, filter)
	if err != nil {
		return h, fmt.Errorf("worker: events of run %s/%s: %w", study, run, err)
	}
	if want == 0 {
		return h, nil
	}
	if want > maxLookupEvents {
		return w.longHistory(ctx, study, run, filter)
	}
	byAttempt := map[int][]events.Envelope{}
	lastAt := map[int]time.Time{}
	err = s.Read(ctx, filter, want, func(m jetstream.Msg) error {
		e, err := events.Decode(m.Data())
		if err != nil {
			return nil
		}
		byAttempt[e.Attempt] = append(byAttempt[e.Attempt], e)
		if meta, err := m.Metadata(); err == nil {
			if meta.Timestamp.After(lastAt[e.Attempt]) {
				lastAt[e.Attempt] = meta.Timestamp
			}
			h.lastSeq = max(h.lastSeq, meta.Sequence.Stream)
		}
		return nil
	})
	if err != nil {
		return h, fmt.Errorf("worker: read run %s/%s: %w", study, run, err)
	}
	for a, evs := range byAttempt {
		sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
		r, err := events.Fold(evs)
		done := err == nil && r.Done()
		if a > h.newest {
			h.newest, h.newestAt = a, lastAt[a]
			h.newestDone = done || anyFinished(evs)
		}
		if !done || r.Finished.Status == events.StatusAborted || int64(len(evs)) != r.LastSeq {
			continue
		}
		if a > h.recorded {
			h.recorded, h.status = a, r.Finished.Status
		}
	}
	return h, nil
}

// longHistory is the history of a run with more than maxLookupEvents events, from three
// messages instead of all: its latest event, its latest run.started (the newest attempt) and its
// latest run.finished. A newest attempt that finished with a status other than aborted counts
// as recorded, without the check that its history is gapless.
func (w *Worker) longHistory(ctx context.Context, study, run, filter string) (runHistory, error) {
	var h runHistory
	seq, last, err := w.lastEvent(ctx, filter)
	if err != nil || last == nil {
		return h, err
	}
	h.lastSeq = seq
	startedSubject, _ := events.Subject(study, run, events.TypeRunStarted)
	finishedSubject, _ := events.Subject(study, run, events.TypeRunFinished)
	_, started, err := w.lastEvent(ctx, startedSubject)
	if err != nil {
		return h, err
	}
	_, finished, err := w.lastEvent(ctx, finishedSubject)
	if err != nil {
		return h, err
	}
	if started != nil {
		h.newest, h.newestAt = started.Attempt, last.Time
	}
	if finished != nil && finished.Attempt == h.newest {
		h.newestDone = true
		if f, ok := finished.Payload.(events.RunFinished); ok && f.Status != events.StatusAborted {
			h.recorded, h.status = finished.Attempt, f.Status
		}
	}
	return h, nil
}

// anyFinished reports whether a history holds a run.finished (a fold may refuse the history
// for another reason; the attempt has ended all the same).
func anyFinished(evs []events.Envelope) bool {
	for i := range evs {
		if evs[i].Type == events.TypeRunFinished {
			return true
		}
	}
	return false
}

// String is used in logs.
func recordedMsg(attempt int, status string) string {
	return fmt.Sprintf("run already recorded by attempt %d (%s): job acknowledged without re-running", attempt, status)
}
