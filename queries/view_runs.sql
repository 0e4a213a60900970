-- view_runs: one row per run attempt (harness and production alike).
-- Inputs: run_folds (finished attempts), events (run.started of attempts not finished yet).
-- Outputs: view runs: the columns of run_folds plus last_attempt (this is the run's latest
--   attempt). status is run.finished's status for finished attempts (succeeded, failed, escalated
--   and overflow: the agent's behaviour, scored; errored: the model or a tool server never
--   answered, with cause_kind and cause; aborted), or 'incomplete' while the attempt's history has
--   a gap or an event the fold refuses (fold_error; finished_status keeps what run.finished
--   said); for attempts without run.finished it is 'aborted' when a later attempt of the same
--   run exists and 'incomplete' otherwise, and the fold columns (plan, states, …, sig_*) are NULL.
--   output is NULL for a run that produced none (run_folds keeps the sentinel '<none>', which
--   its sig_output signs).
--   An analysis of a cell takes the scored runs: WHERE last_attempt AND status IN ('succeeded',
--   'failed', 'escalated', 'overflow').
CREATE OR REPLACE VIEW runs AS
WITH started AS (
    SELECT study, run, attempt,
           min(source_kind) AS source_kind, min(source_id) AS source_id,
           min(time) AS started_at, any_value(payload) AS payload
    FROM events
    WHERE type = 'run.started'
    GROUP BY study, run, attempt
), attempts AS (
    SELECT study, run, attempt FROM started
    UNION
    SELECT study, run, attempt FROM run_folds
), latest AS (
    SELECT study, run, max(attempt) AS attempt FROM attempts GROUP BY study, run
), unfinished AS (
    SELECT s.study, s.run, s.attempt, s.source_kind, s.source_id,
           s.payload ->> '$.task' AS task,
           s.payload ->> '$.model' AS model,
           s.payload ->> '$.condition' AS condition,
           s.payload ->> '$.instance' AS instance,
           CAST(s.payload -> '$.input_index' AS INTEGER) AS input_index,
           CAST(s.payload -> '$.seed_index' AS INTEGER) AS seed_index,
           CAST(s.payload -> '$.seed' AS BIGINT) AS seed,
           CAST(coalesce(s.payload -> '$.components', '[]') AS VARCHAR[]) AS components,
           coalesce(CAST(s.payload -> '$.simulated' AS BOOLEAN), false) AS simulated,
           CASE WHEN s.attempt < l.attempt THEN 'aborted' ELSE 'incomplete' END AS status,
           false AS success,
           s.started_at
    FROM started s
    JOIN latest l ON l.study = s.study AND l.run = s.run
    ANTI JOIN run_folds f ON f.study = s.study AND f.run = s.run AND f.attempt = s.attempt
)
SELECT f.* REPLACE (nullif(f.output, '<none>') AS output), f.attempt = l.attempt AS last_attempt
FROM run_folds f JOIN latest l ON l.study = f.study AND l.run = f.run
UNION ALL BY NAME
SELECT u.*, u.attempt = l.attempt AS last_attempt
FROM unfinished u JOIN latest l ON l.study = u.study AND l.run = u.run;
