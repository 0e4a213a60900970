-- console_cell_unscored: the runs of one cell that no metric scores: runs whose latest attempt
-- ended errored (the infrastructure failed) or has not finished (incomplete).
-- Inputs: $1 study, $2 task, $3 model, $4 condition (VARCHAR). Tables events (run.started) and
--   run_folds (finished attempts).
-- Outputs: rows (run, attempt, status, error, started_us), ordered by status, run; started_us in
--   microseconds since the epoch, error NULL for an incomplete run.
WITH started AS (
    SELECT run, attempt, min(time) AS started_at
    FROM events
    WHERE study = $1 AND type = 'run.started'
      AND (payload ->> '$.task') = $2 AND (payload ->> '$.model') = $3 AND (payload ->> '$.condition') = $4
    GROUP BY run, attempt
), latest AS (
    SELECT run, max(attempt) AS attempt FROM started GROUP BY run
)
SELECT l.run, l.attempt, coalesce(f.status, 'incomplete') AS status, f.error, epoch_us(s.started_at) AS started_us
FROM latest l
JOIN started s ON s.run = l.run AND s.attempt = l.attempt
LEFT JOIN run_folds f ON f.study = $1 AND f.run = l.run AND f.attempt = l.attempt
WHERE f.status IS NULL OR f.status = 'errored'
ORDER BY status, l.run;
