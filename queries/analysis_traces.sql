-- analysis_traces: the signature grouping of the scored runs (those of analysis_runs): each
-- distinct trace of a cell once, with its multiplicity, so that run contents cross the wire once
-- per distinct trace.
-- Inputs: the parameters of analysis_runs ($1 study; $2 task, $3 model, $4 condition, NULL for
--   any; $5, $6 microseconds since the epoch, NULL for unbounded, on started_at). Table
--   run_fold_rows (finished attempts), read without the view run_folds so that the signatures'
--   hex and the lists' JSON are made once a group rather than once a run.
-- Outputs: rows (task, model, condition, sig_trace, sig_tools, plan, states, tools, calls,
--   output, runs, trace_key), one per distinct (sig_trace, sig_tools) of a cell, ordered by
--   task, model, condition, sig_trace, sig_tools. sig_trace covers plan, states, calls and output
--   and sig_tools the tools, so the content is that of any run of the group (the one with the
--   least run id is taken). calls is the canonical JSON array of {"args":…,"tool":…}; runs counts
--   the group's runs. trace_key (BIGINT) is DuckDB's hash of the two signatures' bytes, shifted
--   to 63 bits, by which analysis_runs names each run's trace: two traces of a cell with the
--   same key (a chance of about 5 in 10^8 at 10^6 traces) make the analysis an error, never a
--   merge.
WITH attempts AS (
    SELECT coalesce(task, '') AS task, coalesce(model, '') AS model,
           coalesce(condition, '') AS condition, run, attempt, status, started_at,
           sig_trace, sig_tools, plan, states, tools, calls, output,
           max(attempt) OVER (PARTITION BY run) AS counted_attempt
    FROM run_fold_rows
    WHERE study = $1
)
SELECT task, model, condition, lower(hex(sig_trace)) AS sig_trace, lower(hex(sig_tools)) AS sig_tools,
       arg_min(plan, run) AS plan,
       from_json(arg_min(states, run), '["VARCHAR"]') AS states,
       from_json(arg_min(tools, run), '["VARCHAR"]') AS tools,
       arg_min(calls, run) AS calls,
       arg_min(output, run) AS output,
       count(*) AS runs,
       CAST(hash(attempts.sig_trace, attempts.sig_tools) >> 1 AS BIGINT) AS trace_key
FROM attempts
WHERE attempt = counted_attempt
  AND status IN ('succeeded', 'failed', 'escalated', 'overflow')
  AND (CAST($2 AS VARCHAR) IS NULL OR task = CAST($2 AS VARCHAR))
  AND (CAST($3 AS VARCHAR) IS NULL OR model = CAST($3 AS VARCHAR))
  AND (CAST($4 AS VARCHAR) IS NULL OR condition = CAST($4 AS VARCHAR))
  AND (CAST($5 AS BIGINT) IS NULL OR epoch_us(started_at) >= CAST($5 AS BIGINT))
  AND (CAST($6 AS BIGINT) IS NULL OR epoch_us(started_at) < CAST($6 AS BIGINT))
GROUP BY task, model, condition, sig_trace, sig_tools
ORDER BY task, model, condition, sig_trace, sig_tools;
