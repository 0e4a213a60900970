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
// recorded; a run with more is simply re-run.
const maxLookupEvents = 5000

// recorded reports whether some attempt of the run is already stored complete in DITTO_EVENTS:
// gapless from seq 1, folding without error, and finished with a status other than aborted.
// A worker that crashed after its events were acknowledged but before it acknowledged the job,
// or whose job ack was lost, leaves such an attempt; re-running the job would record the run
// twice. It is called for every delivery of a run with a stored run.started (whatever the
// delivery count, which a restarted single server may have forgotten). It returns an error
// when it could not read the run's history (a stream leader being elected, say): the caller
// must not re-run the job then, since the run may well be recorded.
func (w *Worker) recorded(ctx context.Context, study, run string) (attempt int, status string, ok bool, err error) {
	filter, err := events.Subject(study, run, ">")
	if err != nil {
		return 0, "", false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	js := w.bus.JetStream()
	s, err := js.Stream(ctx, events.EventsStream)
	if err != nil {
		return 0, "", false, fmt.Errorf("worker: stream %s: %w", events.EventsStream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, "", false, fmt.Errorf("worker: events of run %s/%s: %w", study, run, err)
	}
	var want uint64
	for _, n := range info.State.Subjects {
		want += n
	}
	if want == 0 || want > maxLookupEvents {
		return 0, "", false, nil
	}
	cons, err := js.OrderedConsumer(ctx, events.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return 0, "", false, fmt.Errorf("worker: read run %s/%s: %w", study, run, err)
	}
	byAttempt := map[int][]events.Envelope{}
	var got uint64
	for got < want {
		batch, err := cons.Fetch(int(want-got), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return 0, "", false, fmt.Errorf("worker: read run %s/%s: %w", study, run, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if e, err := events.Decode(m.Data()); err == nil {
				byAttempt[e.Attempt] = append(byAttempt[e.Attempt], e)
			}
		}
		if n == 0 {
			return 0, "", false, fmt.Errorf("worker: read run %s/%s: %d of its %d events delivered", study, run, got, want)
		}
		got += uint64(n)
	}
	best := 0
	for a, h := range byAttempt {
		sort.Slice(h, func(i, j int) bool { return h[i].Seq < h[j].Seq })
		r, err := events.Fold(h)
		if err != nil || !r.Done() || r.Finished.Status == events.StatusAborted || int64(len(h)) != r.LastSeq {
			continue
		}
		if a > best {
			best, status = a, r.Finished.Status
		}
	}
	return best, status, best > 0, nil
}

// String is used in logs.
func recordedMsg(attempt int, status string) string {
	return fmt.Sprintf("run already recorded by attempt %d (%s): job acknowledged without re-running", attempt, status)
}
