-- report_window_cells: the (task, model) pairs of a study with runs started in a window.
-- Inputs: $1 study (VARCHAR); $2, $3 (BIGINT microseconds since the epoch): keep runs with
--   $2 <= started_at < $3. View runs (latest attempts).
-- Outputs: rows (task, model, runs, incomplete_runs), ordered by task, model: incomplete_runs
--   are the runs whose history has a gap or an event the fold refuses (fold_error), in no
--   metric until it is whole.
SELECT coalesce(task, '') AS task, coalesce(model, '') AS model, count(*) AS runs,
       count(*) FILTER (WHERE fold_error IS NOT NULL) AS incomplete_runs
FROM runs
WHERE study = $1 AND last_attempt
  AND epoch_us(started_at) >= CAST($2 AS BIGINT) AND epoch_us(started_at) < CAST($3 AS BIGINT)
GROUP BY ALL
ORDER BY task, model;
