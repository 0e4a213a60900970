-- view_studies: one row per study: what study.defined expects against the runs seen so far.
-- Inputs: events of type study.defined (the latest definition of each study wins), runs.
-- Outputs: view studies(study, name, source_kind, expected_runs, paired, simulated, defined_at,
--   runs, finished_runs, incomplete_runs, succeeded_runs, attempts, progress, scored_runs,
--   errored_runs, aborted_runs, fold_errors): runs counts the distinct runs started;
--   finished_runs those whose latest attempt has finished with a whole history (any status), of
--   which scored_runs are the agent's behaviour (succeeded, failed, escalated, overflow),
--   errored_runs the infrastructure's failures and aborted_runs interrupted ones;
--   incomplete_runs have no run.finished or a history with a gap (fold_errors of them);
--   succeeded_runs counts scored runs that succeeded; progress is finished_runs / expected_runs
--   (NULL without a study.defined, e.g. production traces).
CREATE OR REPLACE VIEW studies AS
WITH defined AS (
    SELECT study, arg_max(payload, stream_seq) AS payload, max(time) AS defined_at
    FROM events
    WHERE type = 'study.defined'
    GROUP BY study
), progress AS (
    SELECT study,
           min(source_kind) AS source_kind,
           count(DISTINCT run) AS runs,
           count(*) FILTER (WHERE last_attempt AND status <> 'incomplete') AS finished_runs,
           count(*) FILTER (WHERE last_attempt AND status = 'incomplete') AS incomplete_runs,
           count(*) FILTER (WHERE last_attempt AND success) AS succeeded_runs,
           count(*) AS attempts,
           count(*) FILTER (WHERE last_attempt AND status IN ('succeeded', 'failed', 'escalated', 'overflow')) AS scored_runs,
           count(*) FILTER (WHERE last_attempt AND status = 'errored') AS errored_runs,
           count(*) FILTER (WHERE last_attempt AND status = 'aborted') AS aborted_runs,
           count(*) FILTER (WHERE last_attempt AND fold_error IS NOT NULL) AS fold_errors
    FROM runs
    GROUP BY study
)
SELECT coalesce(d.study, p.study) AS study,
       coalesce(d.payload ->> '$.name', coalesce(d.study, p.study)) AS name,
       coalesce(p.source_kind, 'harness') AS source_kind,
       CAST(d.payload -> '$.expected_runs' AS BIGINT) AS expected_runs,
       coalesce(CAST(d.payload -> '$.paired' AS BOOLEAN), false) AS paired,
       CAST(coalesce(d.payload -> '$.simulated', '[]') AS VARCHAR[]) AS simulated,
       d.defined_at,
       coalesce(p.runs, 0) AS runs,
       coalesce(p.finished_runs, 0) AS finished_runs,
       coalesce(p.incomplete_runs, 0) AS incomplete_runs,
       coalesce(p.succeeded_runs, 0) AS succeeded_runs,
       coalesce(p.attempts, 0) AS attempts,
       coalesce(p.finished_runs, 0) / CAST(d.payload -> '$.expected_runs' AS DOUBLE) AS progress,
       coalesce(p.scored_runs, 0) AS scored_runs,
       coalesce(p.errored_runs, 0) AS errored_runs,
       coalesce(p.aborted_runs, 0) AS aborted_runs,
       coalesce(p.fold_errors, 0) AS fold_errors
FROM defined d
FULL OUTER JOIN progress p ON p.study = d.study;
