-- console_run: every attempt of one run with its fold, for the Run and Compare pages.
-- Inputs: $1 study, $2 run (VARCHAR). Table run_folds (finished attempts) and the run's
--   run.started events (attempts not finished yet), read for this run only.
-- Outputs: rows (attempt, last_attempt, task, model, condition, components, simulated, seed,
--   status, success, error, started_us, finished_us, latency_ms, prompt_tokens,
--   completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
--   rejected_tool_calls, plan, states, tools, calls, output, sig_trace, events, fold_error,
--   check_error), ordered by attempt. An attempt without run.finished has status 'aborted' when
--   a later attempt exists and 'incomplete' otherwise (as the runs view says), and NULL fold
--   columns; output is NULL for no output; started_us and finished_us are microseconds since
--   the epoch.
WITH started AS (
    SELECT attempt, min(time) AS started_at, any_value(payload) AS payload
    FROM events
    WHERE study = $1 AND run = $2 AND type = 'run.started'
    GROUP BY attempt
), folds AS (
    SELECT * FROM run_folds WHERE study = $1 AND run = $2
), attempts AS (
    SELECT coalesce(f.attempt, s.attempt) AS attempt,
           coalesce(f.task, s.payload ->> '$.task') AS task,
           coalesce(f.model, s.payload ->> '$.model') AS model,
           coalesce(f.condition, s.payload ->> '$.condition') AS condition,
           coalesce(f.components, CAST(coalesce(s.payload -> '$.components', '[]') AS VARCHAR[])) AS components,
           coalesce(f.simulated, CAST(s.payload -> '$.simulated' AS BOOLEAN), false) AS simulated,
           coalesce(f.seed, CAST(s.payload -> '$.seed' AS BIGINT)) AS seed,
           f.status, coalesce(f.success, false) AS success, f.error,
           coalesce(f.started_at, s.started_at) AS started_at, f.finished_at, f.latency_ms,
           coalesce(f.prompt_tokens, 0) AS prompt_tokens, coalesce(f.completion_tokens, 0) AS completion_tokens,
           coalesce(f.tokens, 0) AS tokens, coalesce(f.model_calls, 0) AS model_calls,
           coalesce(f.tool_calls, 0) AS tool_calls, coalesce(f.retries, 0) AS retries,
           coalesce(f.plan_reprompts, 0) AS plan_reprompts, coalesce(f.rejected_tool_calls, 0) AS rejected_tool_calls,
           f.plan, f.states, f.tools, f.calls, nullif(f.output, '<none>') AS output, f.sig_trace, f.events,
           f.fold_error, f.check_error
    FROM folds f
    FULL OUTER JOIN started s ON s.attempt = f.attempt
)
SELECT attempt, attempt = max(attempt) OVER () AS last_attempt, task, model, condition, components,
       simulated, seed,
       coalesce(status, CASE WHEN attempt < max(attempt) OVER () THEN 'aborted' ELSE 'incomplete' END) AS status,
       success, error, epoch_us(started_at) AS started_us, epoch_us(finished_at) AS finished_us,
       latency_ms, prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
       rejected_tool_calls, plan, states, tools, calls, output, sig_trace, events, fold_error, check_error
FROM attempts
ORDER BY attempt;
