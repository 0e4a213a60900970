-- analysis_causes: why the errored runs of one study errored, per cell.
-- Inputs: $1 study (VARCHAR); table run_fold_rows. A run counts once, by its latest finished
--   attempt (as in analysis_cells); it is listed when that attempt errored.
-- Outputs: rows (task, model, condition, cause_kind, permanent, cause, runs), one per cell and
--   distinct cause (kind, whether trying again could help, the detail), ordered by cell, then
--   by runs descending, then kind and detail. An errored run without a recorded cause (written by
--   an older producer) reads as kind 'unknown'.
WITH attempts AS (
    SELECT coalesce(task, '') AS task, coalesce(model, '') AS model,
           coalesce(condition, '') AS condition, run, attempt, status,
           cause_kind, cause_permanent, cause,
           max(attempt) OVER (PARTITION BY run) AS counted_attempt
    FROM run_fold_rows
    WHERE study = $1
)
SELECT task, model, condition,
       coalesce(cause_kind, 'unknown') AS cause_kind,
       coalesce(cause_permanent, false) AS permanent,
       coalesce(cause, '') AS cause,
       count(*) AS runs
FROM attempts
WHERE attempt = counted_attempt AND status = 'errored'
GROUP BY ALL
ORDER BY task, model, condition, runs DESC, cause_kind, cause;
