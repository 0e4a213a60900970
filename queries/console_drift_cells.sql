-- console_drift_cells: the (task, model) pairs of a study with the span of their runs' starts,
-- for the drift chart of a production study (its releases, the conditions, pooled).
-- Inputs: $1 study (VARCHAR). Table events (run.started only; the runs view parses every
--   payload of the database's run.started events).
-- Outputs: rows (task, model, runs, first_us, last_us), ordered by task, model: runs counts
--   distinct run ids; first_us and last_us are the earliest and latest run.started times, in
--   microseconds since the epoch.
SELECT coalesce(payload ->> '$.task', '') AS task,
       coalesce(payload ->> '$.model', '') AS model,
       count(DISTINCT run) AS runs,
       epoch_us(min(time)) AS first_us,
       epoch_us(max(time)) AS last_us
FROM events
WHERE study = $1 AND type = 'run.started'
GROUP BY ALL
ORDER BY task, model;
