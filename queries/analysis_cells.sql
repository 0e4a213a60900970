-- analysis_cells: per cell of one study, the runs the metrics score and those they do not.
-- Inputs: $1 study (VARCHAR); events (study.defined: expected runs per cell; run.started: every
--   attempt; model.called and retry.scheduled: the activity of attempts, finished or not),
--   run_fold_rows (finished attempts, read without the view run_folds: the signatures are counted
--   as their bytes, which are distinct exactly when their hex is). Read directly rather than
--   through the view runs, whose scan of every study's run.started events dominated the cost. A
--   run's latest and counted attempts come from a grouping by run joined back (latest), not a
--   window over run, which sorted every attempt with all its columns; runs and incomplete_runs
--   count a run at one row, not by count(DISTINCT run) (which counted a run whose attempts name
--   different cells in each of them). At two cells of 10^6 runs DuckDB took 3.6-4.4 s for the
--   statement with the window and the hex signatures, 3.2-3.7 s with the window and the bytes,
--   1.5-1.9 s with the grouping, and 0.9-1.0 s counting runs without DISTINCT as well (few
--   distinct traces; docs/benchmarks.md).
-- Outputs: one row per cell (task, model, condition; NULL names read as ''), ordered by them:
--   expected_runs (study.defined; NULL without one), runs (distinct runs seen, each once: in the
--   cell of its latest finished attempt, else of its latest attempt, so that, over the statuses
--   run.finished can carry, runs is the sum of counted_runs, errored_runs, aborted_runs and
--   incomplete_runs), counted_runs (N: the scored
--   runs — each run counts once, by its latest finished attempt, and is scored when
--   that attempt is the agent's behaviour: succeeded, failed, escalated or overflow),
--   errored_runs (latest finished attempt errored: the model or a tool server never answered),
--   aborted_runs (latest finished attempt aborted), superseded_attempts (attempts not counted
--   because the same run has a later attempt: crash-aborted attempts and re-executions),
--   superseded_finished (of those, the ones that had finished), incomplete_runs (runs without a
--   finished attempt, or whose latest finished attempt's history has a gap or an event the fold
--   refuses), running_attempts (latest attempts without run.finished), fold_errors (latest
--   finished attempts the fold refused: the incomplete runs that did finish) and check_errors
--   (among scored runs), distinct_traces, distinct_outputs, distinct_tool_sequences (among
--   scored runs), superseded_tokens and superseded_retries (the harness activity spent in
--   superseded attempts), first_started_us and last_finished_us (scored runs, microseconds since
--   the epoch; the order of production releases).
WITH defined AS (
    SELECT arg_max(payload, stream_seq) AS payload
    FROM events
    WHERE study = $1 AND type = 'study.defined'
), expected AS (
    SELECT coalesce(c.task, '') AS task, coalesce(c.model, '') AS model,
           coalesce(c.condition, '') AS condition, sum(c.runs) AS expected_runs
    FROM (
        SELECT unnest(from_json(payload -> '$.cells',
                   '[{"task":"VARCHAR","model":"VARCHAR","condition":"VARCHAR","runs":"BIGINT"}]')) AS c
        FROM defined
    )
    GROUP BY ALL
), activity AS (
    SELECT run, attempt,
           coalesce(sum(CAST(payload -> '$.prompt_tokens' AS BIGINT)
                        + CAST(payload -> '$.completion_tokens' AS BIGINT)) FILTER (WHERE type = 'model.called'), 0) AS tokens,
           count(*) FILTER (WHERE type = 'retry.scheduled') AS retries
    FROM events
    WHERE study = $1 AND type IN ('model.called', 'retry.scheduled')
    GROUP BY run, attempt
), started AS (
    SELECT run, attempt,
           min(payload ->> '$.task') AS task,
           min(payload ->> '$.model') AS model,
           min(payload ->> '$.condition') AS condition,
           min(time) AS started_at
    FROM events
    WHERE study = $1 AND type = 'run.started'
    GROUP BY run, attempt
), folds AS (
    SELECT * FROM run_fold_rows WHERE study = $1
), joined AS (
    SELECT coalesce(f.task, s.task, '') AS task, coalesce(f.model, s.model, '') AS model,
           coalesce(f.condition, s.condition, '') AS condition, run, attempt,
           f.sig_trace IS NOT NULL AS finished,
           f.status IN ('succeeded', 'failed', 'escalated', 'overflow') AS scored,
           f.status,
           f.sig_trace, f.sig_output, f.sig_tools, f.fold_error, f.check_error,
           coalesce(a.tokens, 0) AS tokens, coalesce(a.retries, 0) AS retries,
           coalesce(f.started_at, s.started_at) AS started_at, f.finished_at
    FROM folds f
    FULL OUTER JOIN started s USING (run, attempt)
    LEFT JOIN activity a USING (run, attempt)
), latest AS (
    SELECT run, max(attempt) AS latest_attempt,
           max(attempt) FILTER (WHERE finished) AS counted_attempt
    FROM joined
    GROUP BY run
), attempts AS (
    SELECT * FROM joined JOIN latest USING (run)
), seen AS (
    SELECT task, model, condition,
           count(*) FILTER (WHERE attempt = coalesce(counted_attempt, latest_attempt)) AS runs,
           count(*) FILTER (WHERE attempt = counted_attempt AND scored) AS counted_runs,
           count(*) FILTER (WHERE attempt = counted_attempt AND status = 'errored') AS errored_runs,
           count(*) FILTER (WHERE attempt = counted_attempt AND status = 'aborted') AS aborted_runs,
           count(*) FILTER (WHERE attempt < latest_attempt AND attempt IS DISTINCT FROM counted_attempt) AS superseded_attempts,
           count(*) FILTER (WHERE attempt < latest_attempt AND attempt IS DISTINCT FROM counted_attempt AND finished) AS superseded_finished,
           count(*) FILTER (WHERE counted_attempt IS NULL AND attempt = latest_attempt)
               + count(*) FILTER (WHERE attempt = counted_attempt AND status = 'incomplete') AS incomplete_runs,
           count(*) FILTER (WHERE attempt = latest_attempt AND NOT finished) AS running_attempts,
           count(*) FILTER (WHERE attempt = counted_attempt AND fold_error IS NOT NULL) AS fold_errors,
           count(*) FILTER (WHERE attempt = counted_attempt AND scored AND check_error IS NOT NULL) AS check_errors,
           count(DISTINCT sig_trace) FILTER (WHERE attempt = counted_attempt AND scored) AS distinct_traces,
           count(DISTINCT sig_output) FILTER (WHERE attempt = counted_attempt AND scored) AS distinct_outputs,
           count(DISTINCT sig_tools) FILTER (WHERE attempt = counted_attempt AND scored) AS distinct_tool_sequences,
           coalesce(sum(tokens) FILTER (WHERE attempt < latest_attempt AND attempt IS DISTINCT FROM counted_attempt), 0) AS superseded_tokens,
           coalesce(sum(retries) FILTER (WHERE attempt < latest_attempt AND attempt IS DISTINCT FROM counted_attempt), 0) AS superseded_retries,
           epoch_us(min(started_at) FILTER (WHERE attempt = counted_attempt AND scored)) AS first_started_us,
           epoch_us(max(finished_at) FILTER (WHERE attempt = counted_attempt AND scored)) AS last_finished_us
    FROM attempts
    GROUP BY task, model, condition
)
SELECT coalesce(s.task, e.task) AS task,
       coalesce(s.model, e.model) AS model,
       coalesce(s.condition, e.condition) AS condition,
       e.expected_runs,
       coalesce(s.runs, 0) AS runs,
       coalesce(s.counted_runs, 0) AS counted_runs,
       coalesce(s.errored_runs, 0) AS errored_runs,
       coalesce(s.aborted_runs, 0) AS aborted_runs,
       coalesce(s.superseded_attempts, 0) AS superseded_attempts,
       coalesce(s.superseded_finished, 0) AS superseded_finished,
       coalesce(s.incomplete_runs, 0) AS incomplete_runs,
       coalesce(s.running_attempts, 0) AS running_attempts,
       coalesce(s.fold_errors, 0) AS fold_errors,
       coalesce(s.check_errors, 0) AS check_errors,
       coalesce(s.distinct_traces, 0) AS distinct_traces,
       coalesce(s.distinct_outputs, 0) AS distinct_outputs,
       coalesce(s.distinct_tool_sequences, 0) AS distinct_tool_sequences,
       coalesce(s.superseded_tokens, 0) AS superseded_tokens,
       coalesce(s.superseded_retries, 0) AS superseded_retries,
       s.first_started_us,
       s.last_finished_us
FROM seen s
FULL OUTER JOIN expected e
       ON e.task = s.task AND e.model = s.model AND e.condition = s.condition
ORDER BY task, model, condition;
