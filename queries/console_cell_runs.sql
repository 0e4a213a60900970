-- console_cell_runs: the scored runs of one cell, or of one of its trace groups, for the console's
-- lists.
-- Inputs: $1 study, $2 task, $3 model, $4 condition (VARCHAR); $5 sig_trace (VARCHAR, NULL for
--   every run of the cell). Table run_folds: a run counts once, by its latest finished attempt
--   (as console_cell_groups and the metrics count it).
-- Outputs: rows (run, attempt, status, success, tokens, latency_ms, sig_trace, started_us),
--   ordered by run; started_us in microseconds since the epoch.
WITH attempts AS (
    SELECT run, attempt, status, success, tokens, latency_ms, sig_trace, started_at,
           max(attempt) OVER (PARTITION BY run) AS counted_attempt
    FROM run_folds
    WHERE study = $1 AND task = $2 AND model = $3 AND condition = $4
)
SELECT run, attempt, status, success, tokens, latency_ms, sig_trace, epoch_us(started_at) AS started_us
FROM attempts
WHERE attempt = counted_attempt AND status <> 'errored'
  AND (CAST($5 AS VARCHAR) IS NULL OR sig_trace = CAST($5 AS VARCHAR))
ORDER BY run;
