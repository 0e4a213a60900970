package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

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
	// expect is the stream sequence of the run's latest stored event when the worker decided
	// to run this attempt (0: none): the run.started claims the run only if it still is.
	expect uint64
	// startedSeq is the stream sequence of this attempt's stored run.started (0 until claimed).
	startedSeq uint64
}

type sentEvent struct {
	subject string
	data    []byte
}

var _ harness.Emitter = (*attempt)(nil)

// newAttempt returns attempt n of job's run, to be claimed over a run whose latest stored event
// has stream sequence expect (0: none).
func (w *Worker) newAttempt(job *study.Job, n int, expect uint64) (*attempt, error) {
	pub, err := w.bus.NewPublisher()
	if err != nil {
		return nil, err
	}
	return &attempt{w: w, pub: pub, study: job.Study, run: job.Run, n: n, expect: expect,
		source: events.Source{Kind: events.SourceHarness, ID: w.cfg.ID}, sent: map[string]sentEvent{}}, nil
}

func (a *attempt) emitter() harness.Emitter { return a }

// Emit implements harness.Emitter: the event is numbered, encoded, cleared of API keys
// (redactor), folded and handed to the publisher; its acknowledgement is collected by Wait.
// Every event a worker stores goes through it.
func (a *attempt) Emit(ctx context.Context, p events.Payload) error {
	t0 := time.Now()
	e := events.New(a.study, a.run, t0, p)
	e.Attempt, e.Seq, e.Source = a.n, a.seq+1, a.source
	data, err := events.Encode(&e)
	if err != nil {
		return fmt.Errorf("worker: event %d (%s) is invalid: %w", e.Seq, e.Type, err)
	}
	// No API key is stored, whatever an endpoint echoed back into an error or an answer.
	if red, re, changed, err := a.w.redact.redact(data); err != nil {
		return fmt.Errorf("worker: event %d (%s): %w", e.Seq, e.Type, err)
	} else if changed {
		data, e = red, re
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
	ctx = context.WithoutCancel(ctx)
	switch f, final := p.(events.RunFinished); {
	case e.Type == events.TypeRunStarted:
		err = a.claim(ctx, subject, e.ID, data)
	case final && f.Status != events.StatusAborted:
		err = a.finish(ctx, subject, e.ID, data)
	default:
		err = a.pub.Publish(ctx, subject, e.ID, data)
		a.sent[e.ID] = sentEvent{subject, data}
	}
	if err != nil {
		return err
	}
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

// claim stores the attempt's run.started only if the run's latest stored event is still the one
// the worker saw when it decided to run this attempt (a.expect): two deliveries of one job
// that race, or a delivery that would run beside a live attempt whose events it could not yet
// see, cannot both claim the run. The loser gets ErrSuperseded and runs nothing.
func (a *attempt) claim(ctx context.Context, subject, id string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, a.w.cfg.AckTimeout)
	defer cancel()
	return a.w.patiently(ctx, func() error {
		ctx, cancel := context.WithTimeout(ctx, tryTimeout)
		defer cancel()
		seq, err := a.w.bus.PublishIfLast(ctx, subject, id, data, a.runFilter(), a.expect)
		if errors.Is(err, bus.ErrConflict) {
			// Stored by an earlier try whose acknowledgement was lost, or claimed by another.
			var mine bool
			if seq, mine, err = a.storedAs(ctx, subject, id); err == nil && !mine {
				return fmt.Errorf("%w: run.started of attempt %d: %v", ErrSuperseded, a.n, bus.ErrConflict)
			}
		}
		if err != nil {
			return err
		}
		a.startedSeq = seq
		return nil
	})
}

// finishTries bounds the conditional publishes of one run.finished that meet a changed run
// while the attempt still holds its claim (a late event of an older attempt landing).
const finishTries = 5

// finish stores the attempt's outcome only if the attempt still holds the run: its run.started
// is the run's latest, and nothing was stored on the run since the worker read it. Every event
// of the attempt is acknowledged first, so that the run's latest event is the attempt's own. An
// attempt that another claimed meanwhile (its job was redelivered and the new delivery took
// the run over) gets ErrSuperseded: its outcome is not recorded, and the run is recorded once,
// by the attempt that claimed it. Reads and publishes that fail for a while (a stream leader
// being elected) are made again for up to AckTimeout.
func (a *attempt) finish(ctx context.Context, subject, id string, data []byte) error {
	startedSubject, err := events.Subject(a.study, a.run, events.TypeRunStarted)
	if err != nil {
		return err
	}
	if err := a.wait(a.w.cfg.AckTimeout); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.w.cfg.AckTimeout)
	defer cancel()
	conflicts := 0
	return a.w.patiently(ctx, func() error {
		ctx, cancel := context.WithTimeout(ctx, tryTimeout)
		defer cancel()
		last, _, err := a.w.lastEvent(ctx, a.runFilter())
		if err != nil {
			return err
		}
		started, _, err := a.w.lastEvent(ctx, startedSubject)
		if err != nil {
			return err
		}
		if started != a.startedSeq {
			return fmt.Errorf("%w: attempt %d's run.started (sequence %d) is no longer the run's latest (%d)",
				ErrSuperseded, a.n, a.startedSeq, started)
		}
		_, err = a.w.bus.PublishIfLast(ctx, subject, id, data, a.runFilter(), last)
		if errors.Is(err, bus.ErrConflict) {
			if _, mine, serr := a.storedAs(ctx, subject, id); serr == nil && mine {
				return nil
			}
			if conflicts++; conflicts == finishTries {
				return fmt.Errorf("%w (%d times)", err, conflicts)
			}
			return fmt.Errorf("%w: %w", errRetry, err)
		}
		return err
	})
}

// tryTimeout bounds one try of patiently: a request written to a connection as it breaks gets
// no reply and no error, and must not take the whole time left with it.
const tryTimeout = 5 * time.Second

// errRetry marks an error after which patiently tries again, whatever it wraps.
var errRetry = errors.New("worker: try again")

// patiently calls try until it returns nil, an error saying the attempt lost the run
// (ErrSuperseded) or that the stream refused a conditional publish for good (bus.ErrConflict),
// or ctx ends; between tries it pauses 250ms. The other errors are taken for passing: a stream
// leader being elected, a replica catching up, a connection being re-established.
func (w *Worker) patiently(ctx context.Context, try func() error) error {
	for {
		err := try()
		if err == nil || !errors.Is(err, errRetry) && (errors.Is(err, ErrSuperseded) || errors.Is(err, bus.ErrConflict)) {
			return err
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return err
		}
	}
}

// storedAs reports whether the last event stored on subject is the event id, and its sequence.
func (a *attempt) storedAs(ctx context.Context, subject, id string) (uint64, bool, error) {
	seq, e, err := a.w.lastEvent(ctx, subject)
	if err != nil || e == nil || e.ID != id {
		return 0, false, err
	}
	return seq, true, nil
}

// runFilter is the subject filter of every event of the attempt's run.
func (a *attempt) runFilter() string {
	f, _ := events.Subject(a.study, a.run, ">")
	return f
}

// runFilter is the subject filter of every event of job's run ("" if the job names no valid
// run, which DecodeJob refuses).
func (w *Worker) runFilter(job *study.Job) string {
	f, _ := events.Subject(job.Study, job.Run, ">")
	return f
}

// abort closes an unfinished attempt with run.finished aborted, if the fold allows it and the
// attempt claimed the run (a run.started that was refused leaves nothing to close).
func (a *attempt) abort(reason string) error {
	if a.fold.Started == nil || a.fold.Done() || a.startedSeq == 0 {
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

// exhaust records a job delivered more than MaxAttempts times as an errored final attempt and
// terminates it. The cause is the real one as far as this worker can tell (exhaustCause). If
// the record cannot be stored, the job is Nak'ed: the consumer keeps deliveries beyond
// MaxAttempts for exactly this. It returns false without settling the job when another
// attempt claimed the run first (see attempt.claim).
func (w *Worker) exhaust(msg jetstream.Msg, job *study.Job, n int, expect uint64, log *slog.Logger) (settled bool) {
	w.m.errors.WithLabelValues(errExhausted).Inc()
	reason := fmt.Sprintf("deliveries exhausted: the job was delivered %d times and no attempt finished (max attempts %d)", n, w.cfg.MaxAttempts)
	cause := w.exhaustCause(job, n)
	a, err := w.newAttempt(job, n, expect)
	if err == nil {
		err = a.record(startedOf(job), events.RunFinished{Status: events.StatusErrored, Error: reason, Cause: cause}, w.cfg.AckTimeout)
	}
	if errors.Is(err, ErrSuperseded) {
		return false
	}
	if err != nil {
		w.requeue(msg, w.nakDelay(n), errInfra, log, "could not record an exhausted job", err)
		return true
	}
	w.m.runs.WithLabelValues(events.StatusErrored).Inc()
	if err := msg.TermWithReason(reason); err != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
	}
	w.stats.Exhausted.Add(1)
	log.Warn("job exhausted its deliveries; recorded as errored", "attempts", n, "cause", cause.String())
	return true
}

// clipCause bounds a cause's detail (1 KiB, on a rune boundary).
func clipCause(s string) string {
	const n = 1 << 10
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// exhaustCause finds why the attempts of an exhausted job never finished: the model client
// still cannot be built (the error says why), else the error an earlier attempt was closed
// with (a panic, events JetStream did not acknowledge), else attempts that stopped without a
// word (their workers died or were cut off).
func (w *Worker) exhaustCause(job *study.Job, n int) events.Cause {
	c := events.Cause{Kind: events.CauseOther, Endpoint: job.Endpoint.Name, Attempts: n - 1}
	if _, err := w.model(job); err != nil {
		c.Kind = events.CauseUnreachable
		if sc, ok := w.setupCause(job, err); ok {
			c.Kind, c.Permanent = sc.Kind, true
		}
		c.Detail = clipCause(fmt.Sprintf("the job's model cannot be reached: %v (worker %s)", err, w.cfg.ID))
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subject, _ := events.Subject(job.Study, job.Run, events.TypeRunFinished)
	if _, e, err := w.lastEvent(ctx, subject); err == nil && e != nil {
		if f, ok := e.Payload.(events.RunFinished); ok && f.Error != "" {
			c.Detail = clipCause(fmt.Sprintf("attempt %d ended: %s", e.Attempt, f.Error))
			return c
		}
	}
	c.Detail = fmt.Sprintf("none of %d attempts finished: their workers stopped or lost the broker mid-run", n-1)
	return c
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
		var expect uint64
		if err == nil {
			expect, _, err = w.lastEvent(ctx, w.runFilter(job))
		}
		var a *attempt
		if err == nil {
			a, err = w.newAttempt(job, attemptN, expect)
		}
		if err == nil {
			cause := events.Cause{Kind: events.CauseConfig, Permanent: true, Endpoint: job.Endpoint.Name, Detail: clipCause("malformed job: " + reason)}
			err = a.record(started, events.RunFinished{Status: events.StatusErrored, Error: cause.Detail, Cause: cause}, w.cfg.AckTimeout)
		}
		if errors.Is(err, ErrSuperseded) {
			// Another delivery of the same job recorded it, or is recording it, first.
			log.Info("the rejected job's run was recorded by another delivery")
		} else if err != nil {
			w.requeue(msg, w.cfg.NakDelay, errInfra, log, "could not record a rejected job", err)
			return
		} else {
			w.m.runs.WithLabelValues(events.StatusErrored).Inc()
		}
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
