-- console_cell_groups: the divergence view of one cell: its scored runs grouped by trace
-- signature, largest group first, each with the content of its runs.
-- Inputs: $1 study, $2 task, $3 model, $4 condition (VARCHAR). Table run_folds: a run counts
--   once, by its latest finished attempt, as in the metrics (analysis_traces); runs that ended
--   errored are never scored (console_cell_unscored lists them).
-- Outputs: rows (sig_trace, runs, succeeded, first_run, plan, states, tools, calls, output),
--   ordered by runs descending, then sig_trace. sig_trace covers plan, states, calls and output,
--   so the content is that of every run of the group (taken from its least run id, first_run);
--   calls is the canonical JSON array of {"args":…,"tool":…}; output is NULL for no output.
WITH attempts AS (
    SELECT run, attempt, status, success, sig_trace, plan, states, tools, calls, output,
           max(attempt) OVER (PARTITION BY run) AS counted_attempt
    FROM run_folds
    WHERE study = $1 AND task = $2 AND model = $3 AND condition = $4
)
SELECT sig_trace,
       count(*) AS runs,
       count(*) FILTER (WHERE success AND status NOT IN ('escalated', 'aborted')) AS succeeded,
       min(run) AS first_run,
       arg_min(plan, run) AS plan,
       arg_min(states, run) AS states,
       arg_min(tools, run) AS tools,
       arg_min(calls, run) AS calls,
       nullif(arg_min(output, run), '<none>') AS output
FROM attempts
WHERE attempt = counted_attempt AND status <> 'errored'
GROUP BY sig_trace
ORDER BY runs DESC, sig_trace;
