package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/coding"
	"github.com/dittolab/ditto/internal/coding/verify"
	"github.com/dittolab/ditto/internal/coding/workspace"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/toolserver"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Worker pulls run jobs and runs them. Create it with New and call Run once.
type Worker struct {
	bus     *bus.Bus
	cfg     Config
	log     *slog.Logger
	m       *metrics
	clients *clients
	stats   Stats
	events  eventsStream
	files   *fileTasks // the tasks of the task files jobs carry, their tools bound
	redact  *redactor  // the API keys to keep out of events

	// Coding runs' worktrees, opened at the first coding job.
	wsOnce      sync.Once
	ws          *workspace.Manager
	wsErr       error
	codingSlots chan struct{}
	// memo reuses the verification of a tree the worker verified before (verify.Memo).
	memo *verify.Memo
}

// Stats count what a worker did with the jobs it received. Read them with Worker.Stats.
type Stats struct {
	Acked     atomic.Int64 // jobs acknowledged: their run attempt is recorded
	Requeued  atomic.Int64 // jobs Nak'ed for redelivery (infrastructure error or shutdown)
	Rejected  atomic.Int64 // malformed jobs terminated
	Exhausted atomic.Int64 // jobs terminated after MaxAttempts deliveries, recorded as errored
	// Errored counts runs recorded as errored without running: their model client could not be
	// built for a reason trying again cannot fix (a missing key, an invalid endpoint).
	Errored atomic.Int64
	// AlreadyRecorded counts jobs acknowledged without re-running because an earlier attempt
	// of their run is stored complete (a lost ack, a crash after the events, a delivery count
	// the server forgot).
	AlreadyRecorded atomic.Int64
	// Superseded counts attempts that lost their claim on the run to another attempt (a
	// concurrent delivery of the same job): refused at run.started, nothing was run; refused
	// at run.finished, the outcome was not recorded.
	Superseded atomic.Int64
}

// New returns a worker on b. The streams must exist (bus.EnsureStreams).
func New(b *bus.Bus, cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registry, cfg.ID)
	if err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	w := &Worker{bus: b, cfg: cfg, log: cfg.Logger.With("worker", cfg.ID), m: m, clients: newClients(cfg.Concurrency),
		files:       &fileTasks{pool: &toolserver.Pool{Stderr: cfg.ToolStderr}, tasks: map[string]*fileTask{}},
		redact:      newRedactor(cfg.Endpoints.Secrets()),
		codingSlots: make(chan struct{}, cfg.CodingConcurrency), memo: verify.NewMemo()}
	return w, nil
}

// Registry returns the registry holding the worker's metrics.
func (w *Worker) Registry() *prometheus.Registry { return w.cfg.Registry }

// Stats returns the worker's counters.
func (w *Worker) Stats() *Stats { return &w.stats }

// ID returns the worker id.
func (w *Worker) ID() string { return w.cfg.ID }

// Run pulls and runs jobs until ctx ends, then shuts down as the package doc describes: no new
// job is taken, runs in flight get Config.ShutdownGrace to finish, the others are recorded as
// aborted and Nak'ed. It returns nil after a clean shutdown, or the error that stopped it
// (the connection closed for good, the consumer could not be created).
func (w *Worker) Run(ctx context.Context) error {
	defer func() {
		if w.ws != nil {
			w.ws.Close()
		}
	}()
	// The streams, DITTO_REJECTED_JOBS among them, were ensured when the bus was opened.
	cons, err := w.bus.EnsureJobsConsumer(ctx, JobsConsumer(w.cfg))
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// Runs get their own context: shutdown (ctx) stops fetching at once but cancels the runs
	// only when the grace period is over.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	var wg sync.WaitGroup
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency, "consumer", w.cfg.Consumer, "sim", w.cfg.SimBaseURL != "")
	loopErr := w.fetchLoop(ctx, runCtx, cons, &wg)

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := time.NewTimer(w.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		w.log.Warn("shutdown grace period over: abandoning runs in flight", "grace", w.cfg.ShutdownGrace)
		cancelRuns()
		<-done
	}
	w.clients.closeIdle()
	if err := w.files.close(); err != nil {
		w.log.Warn("closing tool servers", "err", err)
	}
	w.log.Info("worker stopped", "acked", w.stats.Acked.Load(), "requeued", w.stats.Requeued.Load(),
		"rejected", w.stats.Rejected.Load(), "exhausted", w.stats.Exhausted.Load())
	return loopErr
}

// fetchLoop fetches as many jobs as there are free run slots and starts each at once, so
// that no job waits in this process while its ack timer runs.
func (w *Worker) fetchLoop(ctx, runCtx context.Context, cons jetstream.Consumer, wg *sync.WaitGroup) error {
	slots := make(chan struct{}, w.cfg.Concurrency)
	backoff := 100 * time.Millisecond
	for {
		if ctx.Err() != nil { // checked first: select would pick at random between ready cases
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		n := 1
	more:
		for n < cap(slots) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(w.cfg.FetchWait))
		if err != nil {
			for range n {
				<-slots
			}
			if w.bus.Closed() {
				return fmt.Errorf("worker: connection closed: %w", err)
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				// The server closed the connection and the bus dialled (or is dialling) a new
				// one: the consumer handle belongs to the old one.
				if c, cerr := w.bus.EnsureJobsConsumer(ctx, JobsConsumer(w.cfg)); cerr == nil {
					cons = c
				}
			}
			w.m.errors.WithLabelValues(errFetch).Inc()
			w.log.Warn("fetch failed", "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		got := 0
		for msg := range batch.Messages() {
			got++
			if ctx.Err() != nil {
				// Shutting down: hand the job back at once rather than start it.
				_ = msg.Nak()
				w.stats.Requeued.Add(1)
				<-slots
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				w.handle(runCtx, msg)
			}()
		}
		for range n - got {
			<-slots
		}
		if err := batch.Error(); err != nil && w.bus.Closed() {
			return fmt.Errorf("worker: connection closed: %w", err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// handle runs one delivery of a job and settles it: Ack, Nak, NakWithDelay or Term.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.m.errors.WithLabelValues(errPoison).Inc()
		_ = msg.TermWithReason("not a JetStream message: " + err.Error())
		return
	}
	delivered := int(meta.NumDelivered)
	job, err := study.DecodeJob(msg.Data())
	if err == nil {
		if want, _ := job.Subject(); msg.Subject() != want {
			err = fmt.Errorf("%w: job of study %s published on %s", study.ErrInvalidJob, job.Study, msg.Subject())
		}
	}
	stop := w.keepAlive(msg)
	defer stop()
	if err != nil {
		w.reject(msg, meta, &job, err)
		return
	}
	log := w.log.With("study", job.Study, "run", job.Run, "delivery", delivered)
	for contested := false; ; contested = true {
		c, settled := w.decide(ctx, msg, &job, delivered, contested, log)
		if settled {
			return
		}
		attempt := max(delivered, c.newest+1)
		alog := w.log.With("study", job.Study, "run", job.Run, "attempt", attempt)
		if attempt > w.cfg.MaxAttempts {
			settled = w.exhaust(msg, &job, attempt, c.lastSeq, alog)
		} else {
			settled = w.run(ctx, msg, &job, attempt, c.lastSeq, alog)
		}
		if settled {
			return
		}
		// Another attempt claimed the run first: read it again, which waits for that attempt
		// while it lives and acknowledges the job once the run is recorded.
		w.stats.Superseded.Add(1)
		alog.Info("another attempt claimed the run first: reading the run again")
		if !sleep(ctx, 100*time.Millisecond) {
			w.requeue(msg, 0, "", log, "shutting down after losing a claim", nil)
			return
		}
	}
}

// readPatiently calls read until it succeeds, for up to AckTimeout: a read that fails while a
// stream leader is elected or a replica catches up (an ordered read's consumer can be placed on
// it) holds the job with its in-progress acks instead of spending one of its deliveries.
func (w *Worker) readPatiently(ctx context.Context, read func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.AckTimeout)
	defer cancel()
	return w.patiently(rctx, func() error { return read(ctx) })
}

// claimBase is what a delivery decided from the run's stored events: the newest attempt to
// number above, and the run's latest stored event, which the new attempt's claim expects.
type claimBase struct {
	newest  int
	lastSeq uint64
}

// decide reads what the stream holds of the job's run and settles the job when it need not
// run (recorded, or the run cannot be read); otherwise it returns the base of a new attempt.
// The attempt is numbered above every attempt of the run already stored, not by the delivery
// count alone: a single server that was killed can forget delivery counts and deliver the job
// as its first delivery again (see lastAttempt). contested says an attempt of this delivery
// already lost a claim: the whole history is read then, whatever lastAttempt says.
func (w *Worker) decide(ctx context.Context, msg jetstream.Msg, job *study.Job, delivered int, contested bool, log *slog.Logger) (claimBase, bool) {
	var last int
	err := w.readPatiently(ctx, func(ctx context.Context) (err error) {
		last, err = w.lastAttempt(ctx, job.Study, job.Run)
		return err
	})
	if err != nil {
		w.requeue(msg, w.nakDelay(delivered), errInfra, log, "cannot read the run's stored attempts", err)
		return claimBase{}, true
	}
	if last == 0 && !contested {
		// No attempt stored: the claim expects the run to have no event at all.
		return claimBase{}, false
	}
	h, settled := w.awaitHistory(ctx, msg, job, delivered, log)
	if settled {
		return claimBase{}, true
	}
	return claimBase{newest: max(last, h.newest), lastSeq: h.lastSeq}, false
}

// run runs attempt n of the job on its model. It returns false, leaving the job to the caller,
// when the attempt lost its claim on the run.
func (w *Worker) run(ctx context.Context, msg jetstream.Msg, job *study.Job, n int, expect uint64, log *slog.Logger) bool {
	model, err := w.model(job)
	if err != nil {
		if c, permanent := w.setupCause(job, err); permanent {
			// Trying again cannot help (a missing key, an invalid endpoint): the run errors now,
			// with the cause, rather than after every delivery has been spent on it.
			return w.recordErrored(msg, job, n, expect, c, log)
		}
		w.requeue(msg, w.nakDelay(n), errInfra, log, "cannot reach the job's model", err)
		return true
	}
	return w.execute(ctx, msg, job, n, expect, model, log)
}

// model builds the model client of the job's endpoint, if the operator's policy allows the
// endpoint: a job naming a variable or a base URL outside Config.Endpoints is refused before
// the variable is read.
func (w *Worker) model(job *study.Job) (llm.Model, error) {
	if err := w.cfg.Endpoints.CheckJob(job.Endpoint); err != nil {
		return nil, err
	}
	if w.cfg.Models != nil {
		return w.cfg.Models(job.Endpoint, w.cfg.SimBaseURL)
	}
	return w.clients.model(job.Endpoint, w.cfg.SimBaseURL)
}

// setupCause classifies an error building the job's model client: a missing key, an endpoint
// the operator's policy does not allow or an invalid endpoint configuration is permanent on
// this worker; anything else (no simulated models
// here, a factory's own failure) is left to another delivery.
func (w *Worker) setupCause(job *study.Job, err error) (events.Cause, bool) {
	c := events.Cause{Permanent: true, Endpoint: job.Endpoint.Name, Detail: clipCause(fmt.Sprintf("%v (worker %s)", err, w.cfg.ID))}
	switch {
	case errors.Is(err, llm.ErrMissingKey):
		c.Kind = events.CauseMissingKey
	case errors.Is(err, llm.ErrConfig), errors.Is(err, study.ErrEndpointNotAllowed):
		c.Kind = events.CauseConfig
	default:
		return events.Cause{}, false
	}
	return c, true
}

// recordErrored records attempt n of the job, which was not run, as errored with cause c and
// acknowledges the job. It returns false without settling the job when another attempt
// claimed the run first.
func (w *Worker) recordErrored(msg jetstream.Msg, job *study.Job, n int, expect uint64, c events.Cause, log *slog.Logger) bool {
	a, err := w.newAttempt(job, n, expect)
	if err == nil {
		err = a.record(startedOf(job), events.RunFinished{Status: events.StatusErrored, Error: c.String(), Cause: c}, w.cfg.AckTimeout)
	}
	if errors.Is(err, ErrSuperseded) {
		return false
	}
	if err != nil {
		w.requeue(msg, w.nakDelay(n), errInfra, log, "could not record an errored run", err)
		return true
	}
	w.m.runs.WithLabelValues(events.StatusErrored).Inc()
	w.stats.Errored.Add(1)
	if err := doubleAck(msg); err != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
		log.Warn("job ack not confirmed", "err", err)
		return true
	}
	w.stats.Acked.Add(1)
	log.Warn("run errored before it started", "cause", c.String())
	return true
}

// execute runs the harness for one attempt and settles the job, unless the attempt lost its
// claim on the run (it returns false then, and the job is the caller's).
func (w *Worker) execute(ctx context.Context, msg jetstream.Msg, job *study.Job, attempt int, expect uint64, model llm.Model, log *slog.Logger) bool {
	spec, err := RunSpec(job)
	if err == nil && len(job.TaskFile) > 0 {
		spec.TaskDef, err = w.files.taskOf(job)
	}
	if err != nil { // DecodeJob validated the condition and the task file; unreachable unless the build changed
		w.reject(msg, nil, job, err)
		return true
	}
	var ws *workspace.Manager
	if coding.IsCodingRun(spec) {
		var err error
		if ws, err = w.workspaces(ctx); err != nil {
			w.requeue(msg, w.nakDelay(attempt), errInfra, log, "cannot open the coding workspaces", err)
			return true
		}
		// Wait for a coding slot before the attempt exists: a run waiting here has emitted
		// nothing, and the job is kept alive by its in-progress acks.
		select {
		case w.codingSlots <- struct{}{}:
		case <-ctx.Done():
			w.requeue(msg, 0, "", log, "run abandoned at shutdown", nil)
			return true
		}
	}
	a, err := w.newAttempt(job, attempt, expect)
	if err != nil {
		if ws != nil {
			<-w.codingSlots
		}
		w.requeue(msg, w.nakDelay(attempt), errInfra, log, "publisher", err)
		return true
	}
	w.m.inFlight.Inc()
	start := time.Now()
	res, runErr := runSafely(ctx, spec, model, a, coding.Env{Workspaces: ws, Memo: w.memo})
	if ws != nil {
		<-w.codingSlots
	}
	w.m.inFlight.Dec()
	w.m.runDuration.Observe(time.Since(start).Seconds())
	if errors.Is(runErr, ErrSuperseded) {
		// Nothing of this attempt counts: its run.started was refused (nothing stored), or its
		// run.finished was (the attempt's events stay, unfinished, and read as aborted beside
		// the attempt that claimed the run). Its other events are let go.
		if err := a.wait(w.cfg.AckTimeout); err != nil {
			log.Debug("events of a superseded attempt not acknowledged", "err", err)
		}
		log.Info("attempt superseded", "reason", runErr)
		return false
	}
	if runErr != nil {
		switch {
		case errors.Is(runErr, ErrIllFormed):
			w.m.errors.WithLabelValues(errIllFormed).Inc()
		case errors.Is(runErr, ErrPanic):
			w.m.errors.WithLabelValues(errPanic).Inc()
			log.Error("run panicked", "err", runErr)
		}
		// The history is incomplete: close the attempt with the next sequence number if the
		// fold still allows it, so that it reads as aborted rather than cut off.
		if ferr := a.abort("worker: " + runErr.Error()); ferr != nil {
			log.Debug("could not close the attempt", "err", ferr)
		}
	}
	ackStart := time.Now()
	waitErr := a.wait(w.cfg.AckTimeout)
	w.m.ackWait.Observe(time.Since(ackStart).Seconds())
	switch {
	case waitErr != nil:
		w.m.errors.WithLabelValues(errPublish).Inc()
		w.requeue(msg, w.nakDelay(attempt), errInfra, log, "events not acknowledged; the run will be re-run as a new attempt", waitErr)
	case runErr != nil:
		w.requeue(msg, w.nakDelay(attempt), errInfra, log, "run stopped", runErr)
	case res.Status == events.StatusAborted:
		// Cancelled by shutdown: recorded as aborted; the next worker re-runs it at once.
		w.m.runs.WithLabelValues(res.Status).Inc()
		w.requeue(msg, 0, "", log, "run abandoned at shutdown", nil)
	default:
		w.m.runs.WithLabelValues(res.Status).Inc()
		if err := doubleAck(msg); err != nil {
			// The run is recorded; if the job comes back, the delivery reads it and
			// acknowledges the job without running it.
			w.m.errors.WithLabelValues(errAck).Inc()
			log.Warn("job ack not confirmed", "err", err)
			return true
		}
		w.stats.Acked.Add(1)
		log.Debug("run recorded", "status", res.Status, "events", a.seq)
	}
	return true
}

// runSafely runs the harness, turning a panic into an error: one run's bug must not take the
// worker's other runs down with it. The attempt is then closed as aborted and re-run.
func runSafely(ctx context.Context, spec harness.RunSpec, model llm.Model, a *attempt, env coding.Env) (res harness.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	if coding.IsCodingRun(spec) {
		return coding.Run(ctx, spec, model, a.emitter(), env)
	}
	return harness.Run(ctx, spec, model, a.emitter())
}

// workspaces opens the worktree root of coding runs once, at the first coding job.
func (w *Worker) workspaces(ctx context.Context) (*workspace.Manager, error) {
	w.wsOnce.Do(func() {
		w.ws, w.wsErr = workspace.OpenSlot(context.WithoutCancel(ctx), w.cfg.WorkspaceRoot, workspace.Config{})
		if w.wsErr == nil {
			w.log.Info("coding workspaces", "root", w.ws.Root(), "isolation", w.ws.Isolation().String())
		}
	})
	return w.ws, w.wsErr
}

// settleRecorded acknowledges a redelivered job whose run an earlier attempt recorded.
func (w *Worker) settleRecorded(msg jetstream.Msg, log *slog.Logger, prev int, status string) {
	if err := doubleAck(msg); err != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
		log.Warn("job ack not confirmed", "err", err)
		return
	}
	w.stats.AlreadyRecorded.Add(1)
	log.Info(recordedMsg(prev, status))
}

// awaitHistory reads the run's history for a redelivered job and settles the job when it need
// not run: the run is recorded (ack), or the history cannot be read (requeue). While the run's
// newest attempt is unfinished it waits, holding the job with in-progress acks, and reads
// again, until the run is recorded or nothing new was stored on the run for a whole AckWait
// while it watched: the broker redelivers in-flight jobs when a consumer leader change loses
// their in-progress acks, and the live attempt's latest events can be held up (a stream leader
// being elected) for longer than an ack wait, so the age of the run's last stored event alone
// cannot tell a live attempt from a dead one. An attempt whose worker died stops writing and
// is given up after one AckWait of silence, as the broker itself gives up the worker's job.
// What it decides is a matter of cost only: the claim of the next attempt fails if anything
// was stored on the run since this read, and a live attempt that was given up cannot record
// its outcome (attempt.finish).
func (w *Worker) awaitHistory(ctx context.Context, msg jetstream.Msg, job *study.Job, delivered int, log *slog.Logger) (runHistory, bool) {
	var seen uint64
	var quietSince time.Time
	for {
		var h runHistory
		err := w.readPatiently(ctx, func(ctx context.Context) (err error) {
			h, err = w.history(ctx, job.Study, job.Run)
			return err
		})
		if err != nil {
			w.requeue(msg, w.nakDelay(delivered), errInfra, log, "cannot read the run's stored events", err)
			return h, true
		}
		if h.recorded > 0 {
			w.settleRecorded(msg, log, h.recorded, h.status)
			return h, true
		}
		if !h.unfinished() {
			return h, false
		}
		now := time.Now()
		if quietSince.IsZero() || h.lastSeq != seen {
			if quietSince.IsZero() {
				log.Info("the run's newest attempt is unfinished: waiting for it while it writes events", "attempt", h.newest,
					"last_event_age", now.Sub(h.newestAt).Round(time.Millisecond))
			}
			seen, quietSince = h.lastSeq, now
		}
		quiet := now.Sub(quietSince)
		if quiet >= w.cfg.AckWait {
			log.Info("the run's newest attempt stored nothing for an ack wait: running the next", "attempt", h.newest)
			return h, false
		}
		select {
		case <-ctx.Done():
			w.requeue(msg, 0, "", log, "shutting down while waiting for another attempt", nil)
			return h, true
		case <-time.After(min(w.cfg.AckWait-quiet, time.Second)):
		}
	}
}

// doubleAck acknowledges a job and waits for the server's confirmation, trying again for up to
// 10 seconds while no consumer leader answers (one is being elected after a node was lost): a
// lost job ack makes the job come back, and its run is then read back rather than re-run, but
// only if its history can be read.
func doubleAck(msg jetstream.Msg) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		actx, cancel := context.WithDeadline(context.Background(), deadline)
		err := msg.DoubleAck(actx)
		cancel()
		if err == nil || !errors.Is(err, nats.ErrNoResponders) || time.Until(deadline) < 250*time.Millisecond {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// maxNakDelay caps the growing redelivery delay after infrastructure errors.
const maxNakDelay = 2 * time.Minute

// nakDelay is NakDelay doubled for each earlier delivery, capped at maxNakDelay, so that an
// outage of the endpoint or of JetStream spends a job's attempts over minutes, not seconds.
func (w *Worker) nakDelay(delivery int) time.Duration {
	d := w.cfg.NakDelay
	for i := 1; i < delivery && d < maxNakDelay; i++ {
		d *= 2
	}
	return min(d, maxNakDelay)
}

// requeue Naks the job (with delay > 0, NakWithDelay) and counts why.
func (w *Worker) requeue(msg jetstream.Msg, delay time.Duration, kind string, log *slog.Logger, why string, err error) {
	if kind != "" {
		w.m.errors.WithLabelValues(kind).Inc()
	}
	if err != nil {
		log.Warn(why, "err", err, "redelivery_in", delay)
	} else {
		log.Info(why)
	}
	var nerr error
	if delay > 0 {
		nerr = msg.NakWithDelay(delay)
	} else {
		nerr = msg.Nak()
	}
	if nerr != nil {
		w.m.errors.WithLabelValues(errAck).Inc()
		log.Warn("nak failed; the job will be redelivered after the ack wait", "err", nerr)
	}
	w.stats.Requeued.Add(1)
}

// keepAlive sends in-progress acks every AckWait/3 until stop is called.
func (w *Worker) keepAlive(msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(w.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					w.log.Debug("in-progress ack failed", "err", err)
				}
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}
