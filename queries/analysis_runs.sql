-- analysis_runs: the scored runs of one study (or of one cell within a time window), one row
-- each with the per-run values the metrics need; their trace content is in analysis_traces.
-- Inputs: $1 study (VARCHAR); $2 task, $3 model, $4 condition (VARCHAR, NULL for any); $5, $6
--   (BIGINT microseconds since the epoch, NULL for unbounded): keep runs with $5 <= started_at <
--   $6. Table run_fold_rows (one row per finished attempt; reading it rather than the view runs
--   spares the view's scan of every run.started event, and rather than the view run_folds
--   reads the signatures as bytes). A run counts once, by its latest finished attempt (see
--   analysis_cells), and is scored when that attempt's status is the agent's behaviour:
--   succeeded, failed, escalated or overflow (not errored, aborted, or incomplete: a history
--   with a gap).
-- Outputs: rows (task, model, condition, run, attempt, status, success, tokens, latency_ms,
--   retries, plan_reprompts, rejected_tool_calls, escalated, input_index, seed_index, started_us,
--   trace_key, input_key), ordered by task, model, condition, run. success is the ground-truth
--   check, false for escalated runs; latency_ms is run.finished's latency (the timestamps'
--   difference when it is missing); trace_key is analysis_traces' trace_key of the run's trace
--   (a 63-bit hash of its two signatures, not their 128 characters of hex: at two cells of 10^6
--   runs reading the statement as Arrow took 3.4-3.6 s with the hex and 1.7-2.2 s with the
--   hash, docs/benchmarks.md); input_key is the run's input key (NULL when it has none).
WITH attempts AS (
    SELECT coalesce(task, '') AS task, coalesce(model, '') AS model,
           coalesce(condition, '') AS condition, run, attempt, status, success, tokens,
           latency_ms, elapsed_ms, retries, plan_reprompts, rejected_tool_calls, escalated,
           input_index, seed_index, started_at, sig_trace, sig_tools, input_key,
           max(attempt) OVER (PARTITION BY run) AS counted_attempt
    FROM run_fold_rows
    WHERE study = $1
)
SELECT task, model, condition, run, attempt, status,
       success AND status NOT IN ('escalated', 'aborted') AS success,
       tokens,
       coalesce(latency_ms, elapsed_ms, 0) AS latency_ms,
       retries, plan_reprompts, rejected_tool_calls,
       escalated OR status = 'escalated' AS escalated,
       input_index, seed_index,
       epoch_us(started_at) AS started_us,
       CAST(hash(sig_trace, sig_tools) >> 1 AS BIGINT) AS trace_key, input_key
FROM attempts
WHERE attempt = counted_attempt
  AND status IN ('succeeded', 'failed', 'escalated', 'overflow')
  AND (CAST($2 AS VARCHAR) IS NULL OR task = CAST($2 AS VARCHAR))
  AND (CAST($3 AS VARCHAR) IS NULL OR model = CAST($3 AS VARCHAR))
  AND (CAST($4 AS VARCHAR) IS NULL OR condition = CAST($4 AS VARCHAR))
  AND (CAST($5 AS BIGINT) IS NULL OR epoch_us(started_at) >= CAST($5 AS BIGINT))
  AND (CAST($6 AS BIGINT) IS NULL OR epoch_us(started_at) < CAST($6 AS BIGINT))
ORDER BY task, model, condition, run;
