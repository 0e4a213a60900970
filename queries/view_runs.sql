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
--   Context management (coding runs under a tier; NULL tier and budget when the context is not
--   managed): context_tier and context_budget (context.configured), peak_context (the largest
--   request prepared, tokens; NULL when none was), overflowed (a request did not fit), and the
--   invocations of each mechanism: elisions (requests before which observations were elided,
--   M1), recalls (recall_event answered, M2), summaries (summarization calls that folded the
--   history, M3); plan_updates counts the valid update_plan calls.
--   Coding runs (NULL for runs without a workspace): verifications (verification.ran) and their
--   verification_ms, repair_turns (verifications after a patch, after the first), repatches
--   (changes of a file already changed in the run) and protected_attempts (test-file writes
--   refused as test-protected or reverted); the view coding_runs has more.
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
), base AS (
    SELECT f.* REPLACE (nullif(f.output, '<none>') AS output), f.attempt = l.attempt AS last_attempt
    FROM run_folds f JOIN latest l ON l.study = f.study AND l.run = f.run
    UNION ALL BY NAME
    SELECT u.*, u.attempt = l.attempt AS last_attempt
    FROM unfinished u JOIN latest l ON l.study = u.study AND l.run = u.run
), context AS (
    SELECT study, run, attempt,
           any_value(json_extract_string(payload, '$.tier')) FILTER (WHERE type = 'context.configured') AS context_tier,
           any_value(TRY_CAST(json_extract(payload, '$.budget') AS INTEGER)) FILTER (WHERE type = 'context.configured') AS context_budget,
           max(TRY_CAST(json_extract(payload, '$.tokens') AS INTEGER)) FILTER (WHERE type = 'context.prepared') AS peak_context,
           count(*) FILTER (WHERE type = 'context.overflowed') > 0 AS overflowed,
           count(*) FILTER (WHERE type = 'context.elided') AS elisions,
           count(*) FILTER (WHERE type = 'context.recalled') AS recalls,
           count(*) FILTER (WHERE type = 'context.summarized') AS summaries,
           count(*) FILTER (WHERE type = 'plan.updated') AS plan_updates
    FROM events
    WHERE type IN ('context.configured', 'context.prepared', 'context.overflowed', 'context.elided',
                   'context.recalled', 'context.summarized', 'plan.updated')
    GROUP BY study, run, attempt
), coding AS (
    SELECT study, run, attempt,
           count(*) FILTER (WHERE type = 'verification.ran') AS verifications,
           coalesce(sum(TRY_CAST(json_extract(payload, '$.duration_ms') AS DOUBLE)) FILTER (WHERE type = 'verification.ran'), 0) AS verification_ms,
           greatest(count(*) FILTER (WHERE type = 'verification.ran' AND TRY_CAST(json_extract(payload, '$.turn') AS INTEGER) > 0) - 1, 0) AS repair_turns,
           count(*) FILTER (WHERE type = 'file.changed' AND coalesce(TRY_CAST(json_extract(payload, '$.repatch') AS BOOLEAN), false)) AS repatches,
           count(*) FILTER (WHERE (type = 'tool.rejected' AND json_extract_string(payload, '$.reason') = 'test-protected')
                              OR (type = 'file.changed' AND coalesce(TRY_CAST(json_extract(payload, '$.protected') AS BOOLEAN), false)
                                  AND coalesce(TRY_CAST(json_extract(payload, '$.reverted') AS BOOLEAN), false))) AS protected_attempts
    FROM events
    WHERE type IN ('workspace.created', 'verification.ran', 'file.changed', 'tool.rejected')
    GROUP BY study, run, attempt
    HAVING count(*) FILTER (WHERE type = 'workspace.created') > 0
)
SELECT b.*, c.context_tier, c.context_budget, c.peak_context,
       coalesce(c.overflowed, false) AS overflowed,
       coalesce(c.elisions, 0) AS elisions, coalesce(c.recalls, 0) AS recalls,
       coalesce(c.summaries, 0) AS summaries, coalesce(c.plan_updates, 0) AS plan_updates,
       k.verifications, k.verification_ms, k.repair_turns, k.repatches, k.protected_attempts
FROM base b
LEFT JOIN context c ON c.study = b.study AND c.run = b.run AND c.attempt = b.attempt
LEFT JOIN coding k ON k.study = b.study AND k.run = b.run AND k.attempt = b.attempt;
