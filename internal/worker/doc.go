// Package worker is ditto's harness worker: it pulls run jobs (study.Job) from the DITTO_JOBS
// work queue through one durable pull consumer shared by every worker, runs each through the
// harness against the job's model, publishes every event on DITTO_EVENTS, and acknowledges the
// job only after JetStream has acknowledged every event of the run.
//
// # Attempts
//
// The attempt number of a run is the JetStream delivery count of its job
// (MsgMetadata.NumDelivered), raised above the highest attempt of the run already stored: every
// delivery first reads the run's latest run.started on DITTO_EVENTS (one last-message-by-subject
// request; a first attempt finds none) and runs as max(NumDelivered, latest + 1); if that
// request fails, the job is Nak'ed like any infrastructure error. The delivery
// count alone is not enough: a single nats-server persists consumer delivery counts only
// periodically, so after it is killed a job can come back as delivery 1 although attempt 1 of
// its run is stored. A redelivered job is re-run as a new attempt with its own gapless sequence
// numbers from 1. An attempt interrupted by a crash has no run.finished; the analyzer marks an
// unfinished attempt that a later attempt supersedes as aborted. A worker never publishes into
// an attempt it does not own, so it never writes a run.finished for an earlier attempt (it
// could not know that attempt's next sequence number).
//
// Before running a job whose run has a stored attempt (whatever its delivery count), the worker
// reads the run's stored events: if an earlier attempt is complete (gapless from seq 1,
// folding, finished with a status other than aborted), the job is acknowledged without running
// again. That covers a worker that crashed after JetStream acknowledged all its events but
// before it acknowledged the job, and a lost job ack: the run is recorded once. If the newest
// attempt is unfinished, the worker holds the job (in-progress acks) and reads again until the
// run is recorded, or until nothing was stored on the run for one AckWait while it watched
// (the attempt's worker is gone), and only then runs the next attempt.
//
// # One recorded attempt per run
//
// A job can be delivered while an earlier delivery of it is still being run: the broker
// redelivers a job whose in-progress acks were lost (a consumer leader change in a cluster),
// and the live attempt's events can be held up (a stream leader being elected) so that the
// new delivery cannot see them. Reading the run first cannot exclude that; the stream itself
// does, with two conditional publishes (bus.PublishIfLast, JetStream's
// expected-last-subject-sequence on ditto.events.<study>.<run>.>, checked and stored as one
// step by the stream's leader):
//
//   - An attempt claims the run with its run.started, which is stored only if the run's latest
//     stored event is still the one the worker read when it decided to run the attempt. Of
//     two deliveries that read the same run, one claims it; an attempt cannot start beside a
//     live one whose events were stored since the read, nor after a finished one.
//   - An attempt records its outcome with a run.finished (other than aborted) stored only
//     while its own run.started is the run's latest and nothing was stored on the run since
//     the worker looked, after every other event of the attempt was acknowledged. An attempt
//     that another claimed meanwhile (it was taken for dead) cannot record its outcome.
//
// An attempt that loses either (ErrSuperseded, counted in Stats.Superseded) runs nothing more
// and records nothing; its unfinished events read as aborted beside the attempt that claimed
// the run. Its worker reads the run again like a redelivery: it waits for the claimant and
// acknowledges the job once the run is recorded, or claims the run itself if the claimant
// dies. So at most one attempt of a run records an outcome, whatever the timing; the waiting
// above only saves the cost of running attempts that cannot count. An aborted run.finished
// (shutdown, a panic) is published without condition: it records no outcome.
//
// # Failure classes
//
//   - The run's own failures (a model returning garbage, a run escalating, a context window
//     exceeded) are outcomes: the harness records them and the job is acknowledged.
//   - A model or tool server that never answered (401/403, an unknown model, a refused
//     connection, timeouts past the client's bounded retries: package llm classifies them)
//     ends the run as errored, with the cause in run.finished; the job is acknowledged.
//     Errored runs are the infrastructure's failures: the analyzer counts and shows them with
//     their causes and keeps them out of every agent metric.
//   - A model client that cannot be built for a reason trying again cannot fix (the
//     endpoint's key variable unset or empty on this worker, an invalid endpoint, a key
//     variable or base URL outside the operator's Config.Endpoints policy) is recorded at once
//     as an errored run with that cause (Stats.Errored), not retried delivery after delivery.
//     The policy is checked before the key's variable is read: a study spec, which anyone
//     allowed to submit studies writes, cannot make a worker send its AWS_SECRET_ACCESS_KEY
//     to a URL of the spec's choosing.
//   - Infrastructure failures of the worker itself (events not acknowledged by JetStream, no
//     simulated models on this worker, a model factory's own failure) are retried. Events
//     JetStream did not acknowledge are first published again (same Nats-Msg-Id, so stored at
//     most once), a few times with a growing pause; if that fails too, the job is
//     NakWithDelay'ed, the delay doubling with each delivery (Config.NakDelay, capped at two
//     minutes) so that an outage spends a job's attempts over minutes, and re-run as a new
//     attempt.
//   - A malformed job (undecodable, unknown task or component, an unsafe name) is terminated
//     with a reason (TermWithReason). Its raw bytes and the reason are kept on the
//     DITTO_REJECTED_JOBS stream (subject ditto.rejected.jobs.<study>), and when the job
//     names its study, run, task, model and condition, the run is also recorded in
//     DITTO_EVENTS as errored (cause config), so that it counts in the study.
//   - A run that panics (a bug in the harness or a model client) is recovered: the attempt
//     is closed as aborted with the panic as its error and the job is retried like an
//     infrastructure failure; the worker's other runs go on.
//   - A job delivered more than Config.MaxAttempts times is not run again: the worker records
//     a final attempt whose run.finished is errored, with the real cause as far as it can tell
//     (the model client's error, else the error an earlier attempt was closed with, else
//     attempts that stopped without a word), then terminates the job. The consumer's
//     MaxDeliver leaves 30 deliveries beyond MaxAttempts for that record (about an hour of
//     outage at the capped Nak delay), so a run is not silently dropped.
//
// # Shutdown
//
// When the context given to Run ends the worker stops fetching jobs and lets the runs in
// flight finish for up to Config.ShutdownGrace. Runs still going then are cancelled: the
// harness records them with run.finished status aborted (the attempt's next sequence number),
// the worker waits for those events to be acknowledged and Naks the job, which is redelivered
// and re-run as a new attempt.
//
// # The event path
//
// Each run has its own bus.Publisher (so that waiting for acknowledgements waits for that run
// only) wrapped in a harness.Sequencer, and the worker folds every event (events.Run.Apply)
// before publishing it: a harness bug that would produce an ill-formed history fails the run
// instead of polluting the stream.
//
// Every event goes through attempt.Emit, which also replaces the worker's API keys (the values
// of the variables Config.Endpoints lets keys be read from, 8 bytes or more) with [redacted]
// wherever they appear in the encoded event, as is or JSON-escaped: an endpoint that echoes
// the Authorization header into its error text does not get the key stored in
// model.called.error or run.finished.error. (The worker's log lines are not redacted.)
package worker
