package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/study"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// attempt is the event path of one run attempt: it numbers the events (gapless from 1),
// encodes them (which validates them), folds them, and hands them to a Publisher of its own so
// that Wait covers this attempt only. It plays the part of harness.Sequencer, validating each
// event once instead of twice (the Sequencer validates and the publisher's Encode validates
// again; on large tool outputs the canonical-JSON check is the costliest part of an event).
// It is used from the run's goroutine only.
type attempt struct {
	w      *Worker
	pub    *bus.Publisher
	study  string
	run    string
	n      int
	source events.Source
	seq    int64
	fold   events.Run
	sent   map[string]sentEvent // by event id, kept to re-publish what JetStream did not acknowledge
	// republished counts the events published again by wait.
	republished int
}

type sentEvent struct {
	subject string
	data    []byte
}

var _ harness.Emitter = (*attempt)(nil)

func (w *Worker) newAttempt(job *study.Job, n int) (*attempt, error) {
	pub, err := w.bus.NewPublisher()
	if err != nil {
		return nil, err
	}
	return &attempt{w: w, pub: pub, study: job.Study, run: job.Run, n: n,
		source: events.Source{Kind: events.SourceHarness, ID: w.cfg.ID}, sent: map[string]sentEvent{}}, nil
}

func (a *attempt) emitter() harness.Emitter { return a }

// Emit implements harness.Emitter: the event is numbered, encoded, folded and handed to the
// publisher; its acknowledgement is collected by Wait.
func (a *attempt) Emit(ctx context.Context, p events.Payload) error {
	t0 := time.Now()
	e := events.New(a.study, a.run, t0, p)
	e.Attempt, e.Seq, e.Source = a.n, a.seq+1, a.source
	data, err := events.Encode(&e)
	if err != nil {
		return fmt.Errorf("worker: event %d (%s) is invalid: %w", e.Seq, e.Type, err)
	}
	if err := a.fold.Apply(&e); err != nil {
		return fmt.Errorf("%w: %v", ErrIllFormed, err)
	}
	subject, err := events.SubjectOf(&e)
	if err != nil {
		return err
	}
	// The run's context ends at shutdown, but what the run did must still be recorded (its
	// run.finished above all); the publisher's own ack timeout bounds the wait for room.
	if err := a.pub.Publish(context.WithoutCancel(ctx), subject, e.ID, data); err != nil {
		return err
	}
	a.sent[e.ID] = sentEvent{subject, data}
	a.seq = e.Seq
	m := a.w.m
	m.emitLatency.Observe(time.Since(t0).Seconds())
	m.events.WithLabelValues(string(e.Type)).Inc()
	if mc, ok := p.(events.ModelCalled); ok {
		m.steps.Inc()
		m.modelLatency.Observe(mc.LatencyMS / 1000)
	}
	return nil
}

// abort closes an unfinished attempt with run.finished aborted, if the fold allows it.
func (a *attempt) abort(reason string) error {
	if a.fold.Started == nil || a.fold.Done() {
		return nil
	}
	return a.Emit(context.Background(), events.RunFinished{Status: events.StatusAborted, Error: reason})
}

// record publishes a whole attempt that was not run (run.started then run.finished) and waits
// for both to be acknowledged.
func (a *attempt) record(started events.RunStarted, finished events.RunFinished, timeout time.Duration) error {
	if err := a.Emit(context.Background(), started); err != nil {
		return err
	}
	if err := a.Emit(context.Background(), finished); err != nil {
		return err
	}
	return a.wait(timeout)
}

// publishRetries bounds the re-publishing of events JetStream did not acknowledge.
const publishRetries = 3

// wait waits until JetStream has acknowledged every event of the attempt. Events that were not
// acknowledged (a leader election, a brief outage) are published again with the same
// Nats-Msg-Id, which stores them at most once, up to publishRetries times with a growing pause:
// a transient failure delays the run's acknowledgement instead of costing it an attempt.
func (a *attempt) wait(timeout time.Duration) error {
	pause := 500 * time.Millisecond
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := a.pub.Wait(ctx)
		cancel()
		failed, isAck := bus.IsAckError(err)
		if err == nil || !isAck || try == publishRetries {
			return err
		}
		a.w.m.errors.WithLabelValues(errPublish).Inc()
		time.Sleep(pause)
		pause *= 2
		for _, f := range failed {
			ev, ok := a.sent[f.MsgID]
			if !ok {
				return err
			}
			if perr := a.pub.Publish(context.Background(), ev.subject, f.MsgID, ev.data); perr != nil {
				return perr
			}
			a.republished++
		}
	}
}

// startedOf is the run.started of an attempt recorded without running: what the job says.
func startedOf(job *study.Job) events.RunStarted {
	comps := slices.Clone(job.Components)
	slices.Sort(comps)
	return events.RunStarted{
		Task: job.Task, InputIndex: max(job.InputIndex, 0), SeedIndex: max(job.SeedIndex, 0), Model: job.Model,
		Condition: job.Condition, Components: comps, Seed: job.Seed, Sampling: job.Sampling,
		Endpoint: job.Endpoint.Name, Simulated: job.Endpoint.Sim,
	}
}

// exhaust records a job delivered more than MaxAttempts times as a failed final attempt and
// terminates it. If the record cannot be stored, the job is Nak'ed: the consumer keeps
// deliveries beyond MaxAttempts for exactly this.
func (w *Worker) exhaust(msg jetstream.Msg, job *study.Job, n int, log *slog.Logger) {
	w.m.errors.WithLabelValues(errExhausted).Inc()
	reason := fmt.Sprintf("deliveries exhausted: the job was delivered %d times and no attempt finished (max attempts %d)", n, w.cfg.MaxAttempts)
	a, err := w.newAttempt(job, n)
	if err == nil {
		err = a.record(startedOf(job), events.RunFinished{Status: events.StatusFailed, Error: reason}, w.cfg.AckTimeout)
	}
	if err != nil {
		w.requeue(msg, w.nakDelay(n), errInfra, log, "could not record an exhausted job", err)
		return
	}
	w.m.runs.WithLabelValues(events.StatusFailed).Inc()
	if err := msg.TermWithReason(reason); err != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
	}
	w.stats.Exhausted.Add(1)
	log.Warn("job exhausted its deliveries; recorded as failed", "attempts", n)
}

// reject keeps a malformed job on DITTO_REJECTED_JOBS with its reason, records it as a failed
// run when it names enough of itself, and terminates it. meta may be nil.
func (w *Worker) reject(msg jetstream.Msg, meta *jetstream.MsgMetadata, job *study.Job, cause error) {
	reason := cause.Error()
	log := w.log.With("subject", msg.Subject())
	w.m.errors.WithLabelValues(errPoison).Inc()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.AckTimeout)
	defer cancel()

	out := nats.NewMsg(events.RejectedJobSubject(job.Study))
	out.Data = msg.Data()
	out.Header.Set(HeaderReason, reason)
	out.Header.Set(HeaderWorker, w.cfg.ID)
	if meta != nil {
		seq := fmt.Sprint(meta.Sequence.Stream)
		out.Header.Set(HeaderJobSeq, seq)
		out.Header.Set(jetstream.MsgIDHeader, "rejected/"+seq) // one copy per job, however often delivered
	}
	if err := w.keep(ctx, out); err != nil {
		w.requeue(msg, w.cfg.NakDelay, errInfra, log, "could not keep a rejected job", err)
		return
	}
	// Record it in the study too, when it says which run it is.
	attemptN := 1
	if meta != nil {
		attemptN = int(meta.NumDelivered)
	}
	started := startedOf(job)
	if events.ValidateToken("study", job.Study) == nil && events.ValidateToken("run", job.Run) == nil &&
		job.Run != events.StudyRun && started.Validate() == nil {
		last, err := w.lastAttempt(ctx, job.Study, job.Run)
		attemptN = max(attemptN, last+1) // above any stored attempt, as in handle
		var a *attempt
		if err == nil {
			a, err = w.newAttempt(job, attemptN)
		}
		if err == nil {
			err = a.record(started, events.RunFinished{Status: events.StatusFailed, Error: "malformed job: " + reason}, w.cfg.AckTimeout)
		}
		if err != nil {
			w.requeue(msg, w.cfg.NakDelay, errInfra, log, "could not record a rejected job", err)
			return
		}
		w.m.runs.WithLabelValues(events.StatusFailed).Inc()
	}
	if len(reason) > 512 {
		reason = reason[:512]
	}
	if err := msg.TermWithReason(reason); err != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
	}
	w.stats.Rejected.Add(1)
	log.Warn("malformed job rejected", "reason", reason)
}

// keep stores a rejected job on DITTO_REJECTED_JOBS and waits for its acknowledgement.
func (w *Worker) keep(ctx context.Context, m *nats.Msg) error {
	p, err := w.bus.NewPublisher(bus.WithMaxInFlight(1), bus.WithAckTimeout(w.cfg.AckTimeout))
	if err != nil {
		return err
	}
	if err := p.PublishMsg(ctx, m); err != nil {
		return err
	}
	return p.Wait(ctx)
}
